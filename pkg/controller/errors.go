package controller

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"lin.dev/lin-operator/pkg/resources"
)

// Reasons of the Degraded condition and of Warning events.
const (
	// ReasonResourceConflict: a child's name is taken by an object the
	// Installation does not control.
	ReasonResourceConflict = "ResourceConflict"
	// ReasonInvalidSpec: the spec passed the schema but cannot be rendered.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonApplyFailed: the API server refused or failed a write.
	ReasonApplyFailed = "ApplyFailed"
)

// syncError is a failure to reconcile, with the reason that the Degraded
// condition and the Warning event carry.
type syncError struct {
	// reason is one of the Reason constants.
	reason string
	// permanent errors are not retried: only a new spec can fix them.
	permanent bool
	// err is the cause.
	err error
}

// Error implements error.
func (e *syncError) Error() string { return e.err.Error() }

// Unwrap returns the cause.
func (e *syncError) Unwrap() error { return e.err }

// conflictError says that a child's name is taken by an object that inst does
// not control. It is retried with backoff, since the user may remove the
// object, but it is reported at once.
func conflictError(kind, name string) error {
	return &syncError{reason: ReasonResourceConflict,
		err: fmt.Errorf("%s %s exists and is not controlled by this Installation; it is left alone", kind, name)}
}

// writeError classifies a failed write. The API server's refusal of an object
// (Invalid, BadRequest) is permanent: the same object would be refused again.
// Anything else (a conflict, a timeout, the server restarting) is retried.
func writeError(verb, kind, name string, err error) error {
	permanent := apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
	return &syncError{reason: ReasonApplyFailed, permanent: permanent,
		err: fmt.Errorf("%s %s %s: %w", verb, kind, name, err)}
}

// classify sums up the errors of one sync: the reason of the most telling one
// (a conflict or an invalid spec before a failed write), and whether all of
// them are permanent.
func classify(err error) (reason string, permanent bool) {
	if err == nil {
		return "", false
	}
	if resources.IsInvalidSpec(err) {
		return ReasonInvalidSpec, true
	}
	permanent = true
	for _, e := range flatten(err) {
		var se *syncError
		if !errors.As(e, &se) {
			permanent = false
			if reason == "" {
				reason = ReasonApplyFailed
			}
			continue
		}
		permanent = permanent && se.permanent
		if reason == "" || se.reason == ReasonResourceConflict {
			reason = se.reason
		}
	}
	return reason, permanent
}

// flatten returns the errors joined in err, at any depth, or err alone.
func flatten(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}
