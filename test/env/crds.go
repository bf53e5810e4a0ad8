package env

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// fieldManager owns the fields the environment applies.
const fieldManager = "lin-test-env"

// readCRDs returns every CRD manifest in dir, in file name order. The
// documents are kept as they were written rather than decoded into the typed
// struct, whose zero-valued status fields would otherwise be applied too.
func readCRDs(dir string) ([]*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the CRD folder: %w", err)
	}
	var crds []*unstructured.Unstructured
	for _, entry := range entries {
		switch filepath.Ext(entry.Name()) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		if entry.IsDir() {
			continue
		}
		path := filepath.Join(dir, entry.Name())
		docs, err := readManifests(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		crds = append(crds, docs...)
	}
	return crds, nil
}

// readManifests decodes the CRDs of one file, which may hold several YAML
// documents. Anything else in the file is an error, since it would otherwise
// be silently left out of every test.
func readManifests(path string) ([]*unstructured.Unstructured, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		obj := map[string]any{}
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(obj) == 0 {
			// An empty document, such as one after a trailing "---".
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if gvk := u.GroupVersionKind(); gvk != apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition") {
			return nil, fmt.Errorf("%s %q is not an apiextensions.k8s.io/v1 CustomResourceDefinition", gvk, u.GetName())
		}
		out = append(out, u)
	}
}

// installCRDs applies every CRD in dir and waits until each is Established
// and its resources answer a list, so that a test can use them at once. It
// returns how many it installed.
func (e *Env) installCRDs(ctx context.Context, dir string) (int, error) {
	crds, err := readCRDs(dir)
	if err != nil {
		return 0, err
	}
	client, err := apiextensionsclient.NewForConfig(e.Config)
	if err != nil {
		return 0, err
	}
	apiserver := e.processes("kube-apiserver")
	for _, crd := range crds {
		data, err := json.Marshal(crd.Object)
		if err != nil {
			return 0, err
		}
		// Server-side apply makes this idempotent for a reused Dir and
		// updates a CRD that changed since then.
		force := true
		_, err = client.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: fieldManager, Force: &force})
		if err != nil {
			return 0, fmt.Errorf("applying CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, u := range crds {
		name := u.GetName()
		err := e.waitFor(ctx, "CRD "+name+" to be established", apiserver, func(ctx context.Context) (bool, error) {
			crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if !established(crd) {
				return false, nil
			}
			// Established can be reported a moment before the
			// resource is served, so list it once per served version.
			for _, v := range crd.Spec.Versions {
				if !v.Served {
					continue
				}
				res := e.Client.Discovery().RESTClient().Get().
					AbsPath("/apis", crd.Spec.Group, v.Name, crd.Spec.Names.Plural).
					Param("limit", "1").Do(ctx)
				if err := res.Error(); err != nil {
					return false, err
				}
			}
			return true, nil
		})
		if err != nil {
			return 0, err
		}
	}
	return len(crds), nil
}

// established reports whether crd's Established condition is true.
func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// processes returns the started programs with the given names, for waitFor
// to watch.
func (e *Env) processes(names ...string) []*process {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*process
	for _, p := range e.procs {
		for _, n := range names {
			if strings.EqualFold(p.Name, n) {
				out = append(out, p)
			}
		}
	}
	return out
}
