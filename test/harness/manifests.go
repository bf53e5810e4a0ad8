package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// DecodeObjects decodes the YAML or JSON stream of objects that what (kubectl
// kustomize, helm template) printed.
func DecodeObjects(t testing.TB, what string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decoding the output of %s: %v", what, err)
		}
		if len(obj) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
}

// Typed converts the first object of kind in objs into out.
func Typed(t testing.TB, objs []*unstructured.Unstructured, kind string, out any) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
				t.Fatalf("converting %s %s: %v", kind, u.GetName(), err)
			}
			return
		}
	}
	t.Fatalf("the manifests hold no %s", kind)
}

// DeploymentArgs returns the arguments of the first container of the
// Deployment in objs, with $(VAR) references expanded as the kubelet
// expands them, from the container's environment.
func DeploymentArgs(t testing.TB, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var d appsv1.Deployment
	Typed(t, objs, "Deployment", &d)
	c := d.Spec.Template.Spec.Containers[0]
	var pairs []string
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			pairs = append(pairs, "$("+e.Name+")", e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			pairs = append(pairs, "$("+e.Name+")", d.Namespace)
		}
	}
	expand := strings.NewReplacer(pairs...)
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = expand.Replace(a)
	}
	return args
}

// ServiceAccountToken returns a token of the ServiceAccount namespace/name
// from the TokenRequest API, valid for an hour, as a pod's projected token.
func ServiceAccountToken(t testing.TB, client kubernetes.Interface, namespace, name string) string {
	t.Helper()
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for ServiceAccount %s/%s: %v", namespace, name, err)
	}
	return tr.Status.Token
}

// ServiceAccountKubeconfig writes a kubeconfig for the API server of cfg
// that authenticates as the ServiceAccount namespace/name with a token from
// the TokenRequest API, as a pod of a Deployment would.
func ServiceAccountKubeconfig(t testing.TB, client kubernetes.Interface, cfg *rest.Config, namespace, name string) string {
	t.Helper()
	token := ServiceAccountToken(t, client, namespace, name)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["env"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: "env", AuthInfo: name, Namespace: namespace}
	kc.CurrentContext = name
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// WaitDeploymentAvailable waits until every replica of the Deployment
// namespace/name runs the current template and is ready.
func WaitDeploymentAvailable(t testing.TB, client kubernetes.Interface, namespace, name string, timeout time.Duration) *appsv1.Deployment {
	t.Helper()
	var d *appsv1.Deployment
	Eventually(t, timeout, "Deployment "+namespace+"/"+name+" to be available", func(ctx context.Context) (bool, error) {
		var err error
		if d, err = client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		want := *d.Spec.Replicas
		if d.Status.ObservedGeneration != d.Generation || d.Status.AvailableReplicas != want || d.Status.UpdatedReplicas != want ||
			d.Status.Replicas != want {
			return false, fmt.Errorf("%d of %d replicas available, %d updated, %d in all: %+v",
				d.Status.AvailableReplicas, want, d.Status.UpdatedReplicas, d.Status.Replicas, d.Status.Conditions)
		}
		return true, nil
	})
	return d
}
