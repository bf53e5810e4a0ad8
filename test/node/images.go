package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"lin.dev/lin-operator/pkg/image"
	"lin.dev/lin-operator/test/harness"
)

// OperatorImage is the name under which the operator's image is imported:
// what the overlays and chart values of the tests name, with
// imagePullPolicy IfNotPresent, as users run it.
const OperatorImage = "lin.dev/lin-operator:test"

// The images of the test programs: testapp as the nonroot user, and the
// same binary as root, which runAsNonRoot must refuse.
const (
	TestAppImage     = "lin.dev/testapp:test"
	RootTestAppImage = "lin.dev/testapp:root"
)

// BusyboxImage is Debian's static busybox, with the names of the commands
// that the storage provisioner's helper pods run.
const BusyboxImage = "lin.dev/busybox:test"

// busyboxBinary is where Debian's busybox-static puts it.
const busyboxBinary = "/bin/busybox"

// Images are the image tarballs that BuildImages made.
type Images struct {
	// Pause is the sandbox image, PauseImage.
	Pause string
	// TestApp and RootTestApp are TestAppImage and RootTestAppImage.
	TestApp, RootTestApp string
	// Busybox is BusyboxImage.
	Busybox string
	// Operator is the operator's image, OperatorImage, built as `make image`
	// builds it: the binary of the Makefile's build command in
	// pkg/image's layout.
	Operator string
}

// All lists every tarball, for Options.Images.
func (i Images) All() []string {
	return []string{i.Pause, i.TestApp, i.RootTestApp, i.Busybox, i.Operator}
}

// BuildImages builds the images that the node's pods run into dir, from the
// module at root, for this machine's platform. The build needs no network:
// the operator's modules are in the module cache once its tests compiled.
func BuildImages(root, dir string) (Images, error) {
	platform := &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	imgs := Images{
		Pause:       filepath.Join(dir, "pause.tar"),
		TestApp:     filepath.Join(dir, "testapp.tar"),
		RootTestApp: filepath.Join(dir, "testapp-root.tar"),
		Busybox:     filepath.Join(dir, "busybox.tar"),
		Operator:    filepath.Join(dir, "lin-operator.tar"),
	}
	// One go build for both commands, into dir.
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", dir+"/", "./test/node/pause", "./test/node/testapp")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return Images{}, fmt.Errorf("building the test programs: %w: %s", err, out)
	}
	pause, testapp := filepath.Join(dir, "pause"), filepath.Join(dir, "testapp")
	for _, s := range []struct {
		binary, entrypoint, user, out, ref string
		links                              []string
	}{
		{busyboxBinary, busyboxBinary, "", imgs.Busybox, BusyboxImage, []string{"sh", "mkdir", "rm", "ls", "cat"}},
		// The user of registry.k8s.io/pause, which Pod Security restricted
		// accepts for the sandbox.
		{pause, "/pause", "65535:65535", imgs.Pause, PauseImage, nil},
		{testapp, "/testapp", "65532:65532", imgs.TestApp, TestAppImage, nil},
		{testapp, "/testapp", "", imgs.RootTestApp, RootTestAppImage, nil},
	} {
		img, err := image.Static(s.binary, s.entrypoint, s.user, platform, s.links...)
		if err != nil {
			return Images{}, fmt.Errorf("packing %s (Debian's busybox-static comes from hack/install-node-deps.sh): %w", s.binary, err)
		}
		if err := image.WriteArchive(s.out, s.ref, img); err != nil {
			return Images{}, err
		}
	}

	operatorBin := filepath.Join(dir, "lin-operator")
	if err := harness.BuildOperator(root, operatorBin); err != nil {
		return Images{}, err
	}
	key := platform.OS + "/" + platform.Architecture
	operator, err := image.Platform(image.Options{Binaries: map[string]string{key: operatorBin}, Version: "test"}, key)
	if err != nil {
		return Images{}, err
	}
	if err := image.WriteArchive(imgs.Operator, OperatorImage, operator); err != nil {
		return Images{}, err
	}
	return imgs, nil
}
