package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"lin.dev/lin-operator/pkg/resources"
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
	if err := mergePatch(ctx, cl, namespace, name, map[string]any{"spec": map[string]any{c.Field: c.Value}}); err != nil {
		return "", err
	}
	return fmt.Sprintf("installation.lin.dev/%s %s (spec.%s: %t)", name, c.Done, c.Field, c.Value), nil
}

// mergePatch applies patch to the Installation namespace/name as a JSON
// merge patch by FieldManager, with an error that names what failed.
func mergePatch(ctx context.Context, cl Clients, namespace, name string, patch map[string]any) error {
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = cl.Lin.LinV1().Installations(namespace).Patch(ctx, name, types.MergePatchType, data,
		metav1.PatchOptions{FieldManager: FieldManager})
	if err != nil {
		return explain(err, "patch", installationName(namespace, name))
	}
	return nil
}

// installationName names an Installation in errors.
func installationName(namespace, name string) string {
	return fmt.Sprintf("Installation %q in namespace %q", name, namespace)
}

// restartFormat writes restart times: RFC 3339 in UTC with milliseconds,
// so that two restarts in one second differ.
const restartFormat = "2006-01-02T15:04:05.000Z07:00"

// Restart asks for a rolling restart of the Installation namespace/name at
// now: of every shard, or of shard alone when it is not nil. It annotates
// the Installation (resources.AnnotationRestartedAt), and the operator
// rolls the pods through the rollout strategy and the budgets; it deletes
// no pod. It returns what to tell the user.
func Restart(ctx context.Context, cl Clients, namespace, name string, shard *int32, now time.Time) (string, error) {
	what := installationName(namespace, name)
	inst, err := cl.Lin.LinV1().Installations(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", explain(err, "read", what)
	}
	key, which, shards := resources.AnnotationRestartedAt, "every shard", []int32{}
	for i := range resources.Shards(inst) {
		shards = append(shards, i)
	}
	if shard != nil {
		if n := resources.Shards(inst); *shard < 0 || *shard >= n {
			return "", fmt.Errorf("--shard %d: %s has shards 0 to %d", *shard, what, n-1)
		}
		key, which, shards = resources.ShardRestartAnnotation(*shard), fmt.Sprintf("shard %d", *shard), []int32{*shard}
	}
	// After the restarts asked before, even by a client whose clock is
	// ahead of this one's: the operator applies the later time.
	for _, i := range shards {
		if _, last := resources.RestartedAt(inst, i); !now.After(last) {
			now = last.Add(time.Millisecond)
		}
	}
	at := now.UTC().Format(restartFormat)
	if err := mergePatch(ctx, cl, namespace, name, map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: at}}}); err != nil {
		return "", err
	}
	msg := fmt.Sprintf("installation.lin.dev/%s restarting %s (%s=%s); `kubectl lin status %s` follows the rollout", name, which, key, at, name)
	switch {
	case inst.Spec.Paused:
		msg += "\nit is paused: the restart waits for `kubectl lin resume`"
	case inst.Spec.Stop:
		msg += "\nit is stopped: its pods start with the restart when it is started"
	}
	return msg, nil
}
