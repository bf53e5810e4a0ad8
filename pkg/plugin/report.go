package plugin

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"lin.dev/lin-operator/pkg/resources"
)

// OperatorSelector selects the operator's Deployment and pods, as deploy/
// and the chart (without nameOverride) label them.
const OperatorSelector = "app.kubernetes.io/name=lin-operator"

// logLines is how many of the last lines of each operator container's log
// a report holds.
const logLines = 2000

// Report is what a support bundle is made of.
type Report struct {
	// Namespace and Name are the Installation's.
	Namespace, Name string
	// OperatorNamespace, if set, is where the operator runs: its
	// Deployment, pods and logs go in the bundle too.
	OperatorNamespace string
	// OperatorSelector selects the operator's Deployment and pods there;
	// empty: OperatorSelector.
	OperatorSelector string
	// PluginVersion is this binary's version.
	PluginVersion string
	// Now names the bundle's time.
	Now time.Time
}

// Write writes the bundle, a tar.gz, to w: the Installation, its children
// and their events, the ConfigMaps it renders, the operator's Deployment,
// pods and recent logs, and the versions. It never reads a Secret: an
// environment variable or volume that uses one is in the pod specs as the
// reference it is. What the spec holds inline (an env value) and what the
// logs hold goes in as it is.
func (r Report) Write(ctx context.Context, c Clients, w io.Writer) error {
	snap, err := Gather(ctx, c, r.Namespace, r.Name)
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	b := &bundle{tw: tar.NewWriter(gz), dir: fmt.Sprintf("lin-report-%s-%s", r.Namespace, r.Name), now: r.Now}
	b.yaml("installation.yaml", snap.Installation)
	b.yaml("statefulsets.yaml", snap.StatefulSets)
	b.yaml("pods.yaml", snap.Pods)
	b.yaml("persistentvolumeclaims.yaml", snap.Claims)
	b.yaml("poddisruptionbudgets.yaml", snap.Budgets)
	b.yaml("services.yaml", snap.Services)
	b.yaml("events.yaml", snap.Events)
	opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(resources.Labels(snap.Installation)).String()}
	if cms, err := c.Kube.CoreV1().ConfigMaps(r.Namespace).List(ctx, opts); err != nil {
		b.text("configmaps.error.txt", explain(err, "read", "ConfigMaps").Error()+"\n")
	} else {
		b.yaml("configmaps.yaml", cms.Items)
	}
	versions := fmt.Sprintf("kubectl-lin: %s\n", r.PluginVersion)
	if v, err := c.Kube.Discovery().ServerVersion(); err != nil {
		versions += fmt.Sprintf("cluster: unknown (%v)\n", err)
	} else {
		versions += fmt.Sprintf("cluster: %s\n", v.GitVersion)
	}
	if r.OperatorNamespace != "" {
		versions += r.operator(ctx, c, b)
	}
	b.text("versions.txt", versions)
	if err := b.tw.Close(); err != nil && b.err == nil {
		b.err = err
	}
	if err := gz.Close(); err != nil && b.err == nil {
		b.err = err
	}
	return b.err
}

// operator adds the operator's Deployments, pods and logs to b, and returns
// the lines of versions.txt that name its images.
func (r Report) operator(ctx context.Context, c Clients, b *bundle) string {
	opts := metav1.ListOptions{LabelSelector: cmp.Or(r.OperatorSelector, OperatorSelector)}
	var versions string
	deployments, err := c.Kube.AppsV1().Deployments(r.OperatorNamespace).List(ctx, opts)
	if err != nil {
		b.text("operator/deployments.error.txt", explain(err, "read", "the operator's Deployments").Error()+"\n")
	} else {
		b.yaml("operator/deployments.yaml", deployments.Items)
		for _, d := range deployments.Items {
			for _, ctr := range d.Spec.Template.Spec.Containers {
				versions += fmt.Sprintf("operator %s/%s, container %s: %s\n", d.Namespace, d.Name, ctr.Name, ctr.Image)
			}
		}
	}
	pods, err := c.Kube.CoreV1().Pods(r.OperatorNamespace).List(ctx, opts)
	if err != nil {
		b.text("operator/pods.error.txt", explain(err, "read", "the operator's pods").Error()+"\n")
		return versions
	}
	b.yaml("operator/pods.yaml", pods.Items)
	for _, pod := range pods.Items {
		for _, ctr := range pod.Spec.Containers {
			name := fmt.Sprintf("operator/logs/%s-%s.log", pod.Name, ctr.Name)
			logs, err := c.Kube.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name,
				&corev1.PodLogOptions{Container: ctr.Name, TailLines: ptr.To[int64](logLines), Timestamps: true}).DoRaw(ctx)
			if err != nil {
				b.text(name, fmt.Sprintf("the log could not be read: %v\n", err))
				continue
			}
			b.text(name, string(logs))
		}
	}
	return versions
}

// bundle writes files into a tar archive under one folder, keeping the
// first error.
type bundle struct {
	tw  *tar.Writer
	dir string
	now time.Time
	err error
}

// yaml adds obj as YAML under name.
func (b *bundle) yaml(name string, obj any) {
	data, err := yaml.Marshal(obj)
	if err != nil {
		b.text(name+".error.txt", err.Error()+"\n")
		return
	}
	b.text(name, string(data))
}

// text adds a file name holding s.
func (b *bundle) text(name, s string) {
	if b.err != nil {
		return
	}
	hdr := &tar.Header{Name: b.dir + "/" + name, Mode: 0o644, Size: int64(len(s)), ModTime: b.now}
	if b.err = b.tw.WriteHeader(hdr); b.err == nil {
		_, b.err = io.WriteString(b.tw, s)
	}
}
