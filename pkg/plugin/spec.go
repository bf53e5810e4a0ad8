package plugin

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// FieldManager names the plugin in the managedFields of what it changes.
const FieldManager = "kubectl-lin"

// SpecChange is a change to the spec fields that hold an Installation.
type SpecChange struct {
	// Field is the spec field's JSON name.
	Field string
	// Value is what it becomes.
	Value bool
	// Done says what happened, for the user: "paused", "resumed".
	Done string
}

// The changes of pause, resume, stop and start.
var (
	Pause  = SpecChange{Field: "paused", Value: true, Done: "paused"}
	Resume = SpecChange{Field: "paused", Value: false, Done: "resumed"}
	Stop   = SpecChange{Field: "stop", Value: true, Done: "stopped"}
	Start  = SpecChange{Field: "stop", Value: false, Done: "started"}
)

// Apply sets the field of the Installation namespace/name with a merge
// patch by FieldManager, and returns what to tell the user.
func (c SpecChange) Apply(ctx context.Context, cl Clients, namespace, name string) (string, error) {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{c.Field: c.Value}})
	if err != nil {
		return "", err
	}
	_, err = cl.Lin.LinV1().Installations(namespace).Patch(ctx, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		what := fmt.Sprintf("Installation %q in namespace %q", name, namespace)
		if apierrors.IsForbidden(err) {
			return "", fmt.Errorf("no permission to patch %s: %v", what, err)
		}
		return "", explain(err, what)
	}
	return fmt.Sprintf("installation.lin.dev/%s %s (spec.%s: %t)", name, c.Done, c.Field, c.Value), nil
}
