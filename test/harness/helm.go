package harness

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Helm runs the helm of binDir against the cluster of kubeconfig with args
// and returns its standard output; an error fails the test, with helm's
// output. Its configuration, cache and repositories are in a temporary
// folder, so that a developer's own are neither read nor changed.
func Helm(t testing.TB, binDir, kubeconfig string, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), filepath.Join(binDir, "helm"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}
