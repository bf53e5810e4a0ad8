package plugin

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	linv1 "lin.dev/lin-operator/pkg/apis/lin/v1"
	"lin.dev/lin-operator/pkg/resources"
)

// lastEvents is how many events status shows, the latest.
const lastEvents = 10

// printer writes one screen of status: rows of cells in aligned columns,
// and colour only when asked (on a terminal). It aligns by the text's
// visible width, without the colour's escapes, which text/tabwriter would
// count.
type printer struct {
	w     io.Writer
	now   time.Time
	color bool
	// block holds the rows of cells of the table being written.
	block [][]string
	err   error
}

// ANSI colours of phases and states.
const (
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	blue   = "\x1b[34m"
	reset  = "\x1b[0m"
)

// paint wraps s in colour c when the printer colours.
func (p *printer) paint(c, s string) string {
	if !p.color || c == "" {
		return s
	}
	return c + s + reset
}

// line adds one row of cells to the table being written; a row of one cell
// or none ends the table and is written as it is.
func (p *printer) line(cells ...string) {
	if len(cells) > 1 {
		p.block = append(p.block, cells)
		return
	}
	p.flush()
	p.write(strings.Join(cells, ""))
}

// flush writes the table being written, each column as wide as its widest
// cell and two spaces apart.
func (p *printer) flush() {
	var widths []int
	for _, row := range p.block {
		for i, cell := range row {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], visibleWidth(cell))
		}
	}
	for _, row := range p.block {
		var b strings.Builder
		for i, cell := range row {
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-visibleWidth(cell)+2))
			}
		}
		p.write(strings.TrimRight(b.String(), " "))
	}
	p.block = nil
}

// write writes one line, keeping the first error.
func (p *printer) write(line string) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, line)
	}
}

// escapes matches the colour escapes that paint adds.
var escapes = regexp.MustCompile("\x1b\\[[0-9;]*m")

// visibleWidth is how many characters of s show on a terminal.
func visibleWidth(s string) int { return utf8.RuneCountInString(escapes.ReplaceAllString(s, "")) }

// age is how long ago t was, as kubectl prints it, or "-".
func (p *printer) age(t metav1.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(p.now.Sub(t.Time))
}

// phaseColor is the colour of a phase: green when all is well, yellow while
// it changes, red when something is wrong, blue when held by the spec.
func phaseColor(phase linv1.Phase) string {
	switch phase {
	case linv1.PhaseReady:
		return green
	case linv1.PhaseProgressing, linv1.PhasePending:
		return yellow
	case linv1.PhaseDegraded:
		return red
	case linv1.PhaseStopped, linv1.PhasePaused:
		return blue
	}
	return ""
}

// RenderStatus writes the whole of s as of now: the Installation's phase,
// conditions and rollout, each shard with its StatefulSet revision, budget
// and pods, the Services and the last events.
func RenderStatus(w io.Writer, s *Snapshot, now time.Time, color bool) error {
	p := &printer{w: w, now: now, color: color}
	inst := s.Installation
	p.summary(inst)
	p.conditions(inst.Status.Conditions)
	for _, shard := range shardIndexes(s) {
		p.shard(s, shard)
	}
	p.services(s.Services)
	p.events(s.Events)
	p.flush()
	return p.err
}

// summary writes the Installation's own lines.
func (p *printer) summary(inst *linv1.Installation) {
	st := inst.Status
	phase := string(st.Phase)
	if phase == "" {
		phase = "Unknown (not reconciled yet)"
	}
	p.line("Installation:", inst.Namespace+"/"+inst.Name)
	p.line("Phase:", p.paint(phaseColor(st.Phase), phase)+fmt.Sprintf(" (generation %d, observed %d)", inst.Generation, st.ObservedGeneration))
	p.line("Ready:", fmt.Sprintf("%d of %d pods, %d up to date", st.ReadyReplicas, desiredPods(inst), st.UpdatedReplicas))
	p.line("Image:", inst.Spec.Image)
	p.line("Shards:", fmt.Sprintf("%d x %d replicas, rolled out %s", resources.Shards(inst), resources.Replicas(inst), resources.RolloutStrategy(inst)))
	if inst.Spec.Paused || inst.Spec.Stop {
		p.line("Held:", fmt.Sprintf("paused %t, stopped %t", inst.Spec.Paused, inst.Spec.Stop))
	}
	if restarts := restartsAsked(inst); restarts != "" {
		p.line("Restarts:", restarts)
	}
	if st.Endpoint != "" {
		p.line("Endpoint:", st.Endpoint)
	}
	if r := st.Rollout; r != nil {
		deadline := r.Since.Add(resources.ProgressDeadline(inst))
		left := "passed " + duration.HumanDuration(p.now.Sub(deadline)) + " ago"
		if deadline.After(p.now) {
			left = "in " + duration.HumanDuration(deadline.Sub(p.now))
		}
		p.line("Rollout:", fmt.Sprintf("shard %d, since %s (%s ago), deadline %s", r.Shard,
			r.Since.UTC().Format(time.RFC3339), p.age(r.Since), left))
	} else {
		p.line("Rollout:", "none")
	}
}

// restartsAsked lists the rolling restarts that the Installation's
// annotations ask for (kubectl lin restart), or "".
func restartsAsked(inst *linv1.Installation) string {
	var asked []string
	if at := inst.Annotations[resources.AnnotationRestartedAt]; at != "" {
		asked = append(asked, "every shard at "+at)
	}
	for i := range resources.Shards(inst) {
		if at := inst.Annotations[resources.ShardRestartAnnotation(i)]; at != "" {
			asked = append(asked, fmt.Sprintf("shard %d at %s", i, at))
		}
	}
	return strings.Join(asked, ", ")
}

// conditions writes the conditions table.
func (p *printer) conditions(conds []metav1.Condition) {
	p.line()
	p.line("CONDITION", "STATUS", "REASON", "SINCE", "MESSAGE")
	for _, c := range conds {
		color := ""
		bad := (c.Type == linv1.ConditionDegraded) == (c.Status == metav1.ConditionTrue)
		if bad && c.Type != linv1.ConditionProgressing {
			color = red
		}
		p.line(c.Type, p.paint(color, string(c.Status)), c.Reason, p.age(c.LastTransitionTime), oneLine(c.Message))
	}
}

// shardIndexes returns the shards that s has a StatefulSet or pods of, in
// order, and those that the spec asks for.
func shardIndexes(s *Snapshot) []int32 {
	var out []int32
	for i := range resources.Shards(s.Installation) {
		out = append(out, i)
	}
	for _, st := range s.StatefulSets {
		if n, err := strconv.Atoi(st.Labels[resources.LabelShard]); err == nil && !slices.Contains(out, int32(n)) {
			out = append(out, int32(n))
		}
	}
	slices.Sort(out)
	return out
}

// shard writes one shard: its StatefulSet, revision and budget, then its pods.
func (p *printer) shard(s *Snapshot, shard int32) {
	label := strconv.Itoa(int(shard))
	p.line()
	sts := find(s.StatefulSets, func(st appsv1.StatefulSet) bool { return st.Labels[resources.LabelShard] == label })
	if sts == nil {
		p.line(fmt.Sprintf("Shard %d: ", shard) + p.paint(yellow, "no StatefulSet yet"))
		return
	}
	revision := sts.Status.UpdateRevision
	if sts.Status.CurrentRevision != "" && sts.Status.CurrentRevision != sts.Status.UpdateRevision {
		revision = sts.Status.CurrentRevision + " -> " + sts.Status.UpdateRevision + p.paint(yellow, " (rolling)")
	}
	want := int32(1)
	if sts.Spec.Replicas != nil {
		want = *sts.Spec.Replicas
	}
	budget := "no budget"
	if b := find(s.Budgets, func(b policyv1.PodDisruptionBudget) bool { return b.Labels[resources.LabelShard] == label }); b != nil {
		budget = fmt.Sprintf("budget %s allows %d disruption", b.Name, b.Status.DisruptionsAllowed)
		if b.Status.DisruptionsAllowed != 1 {
			budget += "s"
		}
	}
	p.line(fmt.Sprintf("Shard %d: StatefulSet %s, revision %s, %d/%d ready, %d updated, %s", shard,
		sts.Name, revision, sts.Status.ReadyReplicas, want, sts.Status.UpdatedReplicas, budget))
	p.line("  POD", "READY", "RESTARTS", "REVISION", "NODE", "AGE", "CLAIM")
	for _, pod := range s.Pods {
		if pod.Labels[resources.LabelShard] != label {
			continue
		}
		ready := p.paint(red, "false")
		if podReady(pod) {
			ready = "true"
		}
		node := pod.Spec.NodeName
		if node == "" {
			node = "-"
		}
		p.line("  "+pod.Name, ready, strconv.Itoa(int(restarts(pod))), p.revision(sts, pod), node, p.age(pod.CreationTimestamp), p.claim(s, pod))
	}
}

// revision names the StatefulSet revision a pod runs by its hash, and marks
// a pod that runs neither the current nor the update revision: a rollout
// left it behind, and the operator replaces it once it is not Ready.
func (p *printer) revision(sts *appsv1.StatefulSet, pod corev1.Pod) string {
	rev := pod.Labels[appsv1.ControllerRevisionHashLabelKey]
	if rev == "" {
		return "-"
	}
	short := strings.TrimPrefix(rev, sts.Name+"-")
	if rev != sts.Status.CurrentRevision && rev != sts.Status.UpdateRevision {
		return short + p.paint(yellow, " (left behind)")
	}
	return short
}

// claim describes the claim of pod's data volume: name, size, phase.
func (p *printer) claim(s *Snapshot, pod corev1.Pod) string {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		c := find(s.Claims, func(c corev1.PersistentVolumeClaim) bool { return c.Name == name })
		if c == nil {
			return name + " (missing)"
		}
		size := c.Status.Capacity[corev1.ResourceStorage]
		if size.IsZero() {
			size = c.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		phase := string(c.Status.Phase)
		if c.Status.Phase != corev1.ClaimBound {
			phase = p.paint(yellow, phase)
		}
		return fmt.Sprintf("%s %s %s", name, size.String(), phase)
	}
	return "-"
}

// services writes the Services' table.
func (p *printer) services(svcs []corev1.Service) {
	p.line()
	p.line("SERVICE", "TYPE", "CLUSTER-IP", "PORTS")
	for _, svc := range svcs {
		var ports []string
		for _, port := range svc.Spec.Ports {
			ports = append(ports, fmt.Sprintf("%s %d/%s", port.Name, port.Port, port.Protocol))
		}
		p.line(svc.Name, string(svc.Spec.Type), svc.Spec.ClusterIP, strings.Join(ports, ", "))
	}
}

// events writes the last events, oldest first.
func (p *printer) events(events []corev1.Event) {
	p.line()
	p.line("LAST SEEN", "OBJECT", "TYPE", "REASON", "MESSAGE")
	if len(events) > lastEvents {
		events = events[len(events)-lastEvents:]
	}
	for _, e := range events {
		kind := e.Type
		if e.Type == corev1.EventTypeWarning {
			kind = p.paint(red, kind)
		}
		p.line(p.age(eventTime(e)), strings.ToLower(e.InvolvedObject.Kind)+"/"+e.InvolvedObject.Name, kind, e.Reason, oneLine(e.Message))
	}
}

// desiredPods is how many pods inst should run in all its shards now.
func desiredPods(inst *linv1.Installation) int32 {
	return resources.Shards(inst) * resources.DesiredReplicas(inst)
}

// oneLine keeps a message on its row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// find returns a pointer to the first item of items that matches, or nil.
func find[T any](items []T, match func(T) bool) *T {
	for i := range items {
		if match(items[i]) {
			return &items[i]
		}
	}
	return nil
}

// podReady reports whether pod's Ready condition is True.
func podReady(pod corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// restarts adds up the restarts of pod's containers.
func restarts(pod corev1.Pod) int32 {
	var n int32
	for _, c := range pod.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}
