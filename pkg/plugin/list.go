package plugin

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// List returns the Installations of namespace, or of every namespace when
// it is empty, in the API server's order: by namespace, then name.
func List(ctx context.Context, c Clients, namespace string) ([]linv1.Installation, error) {
	list, err := c.Lin.LinV1().Installations(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		what := "Installations in namespace " + namespace
		if namespace == "" {
			what = "Installations in every namespace"
		}
		return nil, explain(err, "read", what)
	}
	return list.Items, nil
}

// RenderList writes one line per Installation: its phase, ready pods,
// shards, rollout and age, and a summary of its health from the condition
// that explains its phase. With allNamespaces, the first column is the
// namespace.
func RenderList(w io.Writer, insts []linv1.Installation, now time.Time, allNamespaces, color bool) error {
	p := &printer{w: w, now: now, color: color}
	header := []string{"NAME", "PHASE", "READY", "SHARDS", "ROLLOUT", "AGE", "HEALTH"}
	if allNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	p.line(header...)
	for i := range insts {
		inst := &insts[i]
		st := inst.Status
		phase := string(st.Phase)
		if phase == "" {
			phase = "Unknown"
		}
		rollout := "-"
		if st.Rollout != nil {
			rollout = fmt.Sprintf("shard %d for %s", st.Rollout.Shard, p.age(st.Rollout.Since))
		}
		row := []string{inst.Name, p.paint(phaseColor(st.Phase), phase),
			fmt.Sprintf("%d/%d", st.ReadyReplicas, desiredPods(inst)),
			fmt.Sprintf("%dx%d", resources.Shards(inst), resources.Replicas(inst)),
			rollout, p.age(inst.CreationTimestamp), health(inst)}
		if allNamespaces {
			row = append([]string{inst.Namespace}, row...)
		}
		p.line(row...)
	}
	p.flush()
	return p.err
}

// health sums up an Installation in one line: the message of the condition
// that explains its phase.
func health(inst *linv1.Installation) string {
	st := inst.Status
	if st.ObservedGeneration != inst.Generation {
		return fmt.Sprintf("generation %d not reconciled yet", inst.Generation)
	}
	for _, t := range []string{linv1.ConditionDegraded, linv1.ConditionProgressing} {
		if c := meta.FindStatusCondition(st.Conditions, t); c != nil && c.Status == "True" && c.Message != "" {
			return oneLine(c.Reason + ": " + c.Message)
		}
	}
	if c := meta.FindStatusCondition(st.Conditions, linv1.ConditionReady); c != nil && c.Message != "" {
		return oneLine(c.Message)
	}
	return "-"
}
