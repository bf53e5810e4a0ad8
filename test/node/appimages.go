package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"lin.dev/lin-operator/pkg/image"
	"lin.dev/lin-operator/test/env"
)

// The images of the applications that the real-application tests run.
const (
	// EtcdImage is the reference that examples/etcd.yaml names, under which
	// the etcd that hack/build-tools.sh builds (the version that the
	// control plane runs) is imported, at the path of etcd's own image.
	EtcdImage = "gcr.io/etcd-development/etcd:v3.6.16"
	// EtcdImageRetagged is the same binary under a second name: an image
	// change that rolls the pods and changes nothing else.
	EtcdImageRetagged = "lin.dev/etcd:v3.6.16"
	// ShardAppImage is examples/shardapp, as examples/shardapp.yaml names
	// it; ShardAppImageV2 is the same binary under a second tag.
	ShardAppImage   = "lin.dev/shardapp:v1"
	ShardAppImageV2 = "lin.dev/shardapp:v2"
	// CrashImage's process exits at once with status 1 (busybox's false):
	// a bad release whose pods crash-loop for real.
	CrashImage = "lin.dev/shardapp:crash"
)

// etcdEntrypoint is where etcd's own image has it, and examples/etcd.yaml's
// command names.
const etcdEntrypoint = "/usr/local/bin/etcd"

// AppImages are the tarballs that BuildAppImages made, for Options.Images.
type AppImages []string

// BuildAppImages packs the applications of the real-application tests into
// dir: etcd from the tools folder, and examples/shardapp built from the
// module at root, both as the non-root user 65532 that their examples run
// as, each under its two names, and CrashImage.
func BuildAppImages(root, dir string) (AppImages, error) {
	binDir, err := env.ResolveBinDir("")
	if err != nil {
		return nil, err
	}
	shardapp := filepath.Join(dir, "shardapp")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", shardapp, "./examples/shardapp")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building examples/shardapp: %w: %s", err, out)
	}
	platform := &v1.Platform{OS: "linux", Architecture: runtime.GOARCH}
	var tarballs AppImages
	for _, s := range []struct{ binary, entrypoint, ref string }{
		{filepath.Join(binDir, "etcd"), etcdEntrypoint, EtcdImage},
		{filepath.Join(binDir, "etcd"), etcdEntrypoint, EtcdImageRetagged},
		{shardapp, "/shardapp", ShardAppImage},
		{shardapp, "/shardapp", ShardAppImageV2},
		{busyboxBinary, "/bin/false", CrashImage},
	} {
		img, err := image.Static(s.binary, s.entrypoint, "65532:65532", platform)
		if err != nil {
			return nil, fmt.Errorf("packing %s: %w", s.binary, err)
		}
		out := filepath.Join(dir, fmt.Sprintf("app-%d.tar", len(tarballs)))
		if err := image.WriteArchive(out, s.ref, img); err != nil {
			return nil, err
		}
		tarballs = append(tarballs, out)
	}
	return tarballs, nil
}
