package controller

import (
	"errors"
	"testing"
)

func TestClassifyReadsJoinedErrorsAtAnyDepth(t *testing.T) {
	refused := &syncError{reason: ReasonApplyFailed, permanent: true, err: errors.New("refused")}
	conflict := conflictError("Service", "demo")
	timeout := errors.New("timeout")
	for _, tc := range []struct {
		name      string
		err       error
		reason    string
		permanent bool
	}{
		{"none", nil, "", false},
		{"one refusal", refused, ReasonApplyFailed, true},
		{"a refusal and a timeout, nested", errors.Join(errors.Join(refused), timeout), ReasonApplyFailed, false},
		{"a timeout, then a refusal nested", errors.Join(timeout, errors.Join(nil, refused)), ReasonApplyFailed, false},
		{"a conflict nested after a refusal", errors.Join(refused, errors.Join(refused, conflict)), ReasonResourceConflict, false},
		{"a refusal and a timeout joined in one", errors.Join(errors.Join(refused, timeout)), ReasonApplyFailed, false},
		{"refusals nested", errors.Join(errors.Join(refused, refused), refused), ReasonApplyFailed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, permanent := classify(tc.err)
			if reason != tc.reason || permanent != tc.permanent {
				t.Errorf("classify = %q, %v; want %q, %v", reason, permanent, tc.reason, tc.permanent)
			}
		})
	}
}
