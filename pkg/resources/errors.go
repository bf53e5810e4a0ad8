package resources

import (
	"errors"
	"fmt"
)

// InvalidSpecError says that an Installation passed the CRD's schema but its
// children cannot be rendered (say, config larger than a ConfigMap can hold).
// Retrying cannot fix it; only a new spec can.
type InvalidSpecError struct {
	// Field is the path of the offending field, like "spec.config".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

// Error implements error.
func (e *InvalidSpecError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// IsInvalidSpec reports whether err is, or wraps, an InvalidSpecError.
func IsInvalidSpec(err error) bool {
	var target *InvalidSpecError
	return errors.As(err, &target)
}
