// Package image tests `make image`: the operator's OCI image, built with no
// container engine, pushed to a registry, pulled back and run.
package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"lin.dev/lin-operator/pkg/client/clientset/versioned"
	"lin.dev/lin-operator/pkg/image"
	"lin.dev/lin-operator/test/env"
	"lin.dev/lin-operator/test/harness"
)

// revision is the commit the test's image says it was built from.
const revision = "0123456789abcdef0123456789abcdef01234567"

// TestMakeImagePushesAnImageThatRuns runs `make image` with IMAGE naming a
// registry that runs in this process (go-containerregistry's), pulls the
// index back, checks both platforms' config and files, and runs the amd64
// binary from its layer against a control plane until it reconciles an
// Installation.
func TestMakeImagePushesAnImageThatRuns(t *testing.T) {
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	u, err := url.Parse(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	ref := u.Host + "/lin-operator:test"
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-C", root, "image", "IMAGE="+ref, "VERSION=v0.0.0-test", "REVISION="+revision)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	} else {
		t.Logf("make image:\n%s", out)
	}

	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if manifest.MediaType != types.OCIImageIndex {
		t.Errorf("index media type %s, want %s", manifest.MediaType, types.OCIImageIndex)
	}
	var platforms []string
	binaries := map[string][]byte{}
	for _, d := range manifest.Manifests {
		platforms = append(platforms, d.Platform.String())
		files := checkImage(t, idx, d)
		binaries[d.Platform.Architecture] = files[image.Entrypoint[1:]]
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Fatalf("platforms %v, want %v", platforms, want)
	}
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		f, err := elf.NewFile(bytes.NewReader(binaries[arch]))
		if err != nil || f.Machine != machine {
			t.Errorf("the %s image's binary is no %s executable: %v", arch, machine, err)
		}
	}
	runOperator(t, binaries["amd64"])
}

// checkImage checks the config of one platform's image and returns the
// files of its one layer by name.
func checkImage(t *testing.T, idx v1.ImageIndex, d v1.Descriptor) map[string][]byte {
	t.Helper()
	img, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if cfg.OS != d.Platform.OS || cfg.Architecture != d.Platform.Architecture || c.User != image.User ||
		!slices.Equal(c.Entrypoint, []string{image.Entrypoint}) {
		t.Errorf("%s: os %s, architecture %s, user %q, entrypoint %q; want %s, user %s, entrypoint %s",
			d.Platform, cfg.OS, cfg.Architecture, c.User, c.Entrypoint, d.Platform, image.User, image.Entrypoint)
	}
	for label, want := range map[string]string{"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.version": "v0.0.0-test", "org.opencontainers.image.source": "https://github.com/lin-dev/lin-operator"} {
		if got := c.Labels[label]; got != want {
			t.Errorf("%s: label %s = %q, want %q", d.Platform, label, got, want)
		}
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%s: %d layers (%v), want 1", d.Platform, len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = data
	}
	if !strings.Contains(string(files["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("%s: /etc/passwd names no user 65532: %q", d.Platform, files["etc/passwd"])
	}
	return files
}

// runOperator runs binary against a control plane of its own, on one
// namespace, until it has reconciled an Installation.
func runOperator(t *testing.T, binary []byte) {
	path := filepath.Join(t.TempDir(), "lin-operator")
	if err := os.WriteFile(path, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	e := env.StartForTest(t, env.Options{})
	ns := harness.Namespace(t, e.Client)
	p := harness.StartProcess(t, "operator", path, "--kubeconfig", e.KubeconfigPath, "--namespace", ns,
		"--metrics-bind-address="+harness.FreeAddress(t), "--health-probe-bind-address="+harness.FreeAddress(t))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator log:\n%s", p.LogTail(40))
		}
	})
	lin := versioned.NewForConfigOrDie(e.Config)
	created, err := lin.LinV1().Installations(ns).Create(context.Background(), harness.NewInstallation(ns, "from-image"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, time.Minute, "the Installation reconciled by the image's binary", func(ctx context.Context) (bool, error) {
		inst, err := lin.LinV1().Installations(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.Exited() {
			return false, fmt.Errorf("the operator exited: %v", p.Err())
		}
		if inst.Status.ObservedGeneration != created.Generation {
			return false, nil
		}
		_, err = e.Client.AppsV1().StatefulSets(ns).Get(ctx, created.Name+"-0", metav1.GetOptions{})
		return err == nil, nil
	})
}
