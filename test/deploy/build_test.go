package deploy

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"lin.dev/lin-operator/test/harness"
)

// dockerfileBuild returns the Dockerfile's RUN command that runs go build.
func dockerfileBuild(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		return "", err
	}
	joined := strings.ReplaceAll(string(data), "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "RUN "); ok && strings.Contains(cmd, "go build") {
			return cmd, nil
		}
	}
	return "", errors.New("the Dockerfile runs no go build")
}

func TestDockerfileBuildsAsTheMakefileDoes(t *testing.T) {
	makeLine, err := harness.MakefileBuild(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dockerLine, err := dockerfileBuild(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	makeEnv, makeArgv, err := harness.BuildCommand(makeLine, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	dockerEnv, dockerArgv, err := harness.BuildCommand(dockerLine, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(makeEnv, dockerEnv) || !slices.Equal(makeArgv, dockerArgv) {
		t.Errorf("the Dockerfile builds with\n\t%s\nthe Makefile with\n\t%s\nthey must be the same but for the output path", dockerLine, makeLine)
	}
	if !slices.Contains(makeEnv, "CGO_ENABLED=0") || !slices.Contains(makeArgv, "-trimpath") {
		t.Errorf("the build %q is not static and trimmed", makeLine)
	}
}

func TestDockerfileUsesTheModulesGoVersionAndANonrootDistrolessBase(t *testing.T) {
	dockerfile, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	if goVersion == nil {
		t.Fatal("go.mod has no go line")
	}
	for _, want := range []string{
		"ARG GO_VERSION=" + string(goVersion[1]) + "\n",
		"FROM gcr.io/distroless/static:nonroot\n",
		"USER 65532:65532\n",
	} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("the Dockerfile lacks %q", strings.TrimSpace(want))
		}
	}
}
