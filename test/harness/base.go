package harness

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Base is the operator of the release named in hack/upgrade-base, from which
// the upgrade tests upgrade.
type Base struct {
	// Commit is the commit in hack/upgrade-base.
	Commit string
	// Tree is that commit's files; Binary is its operator, built there.
	Tree, Binary string
}

// BuildBase extracts the commit named in hack/upgrade-base from the history
// of the repository at root into dir and builds its operator there as
// `make build` does.
func BuildBase(root, dir string) (Base, error) {
	commit, err := baseCommit(root)
	if err != nil {
		return Base{}, err
	}
	b := Base{Commit: commit, Tree: dir, Binary: filepath.Join(dir, "bin", "lin-operator")}
	if err := haveCommit(root, b.Commit); err != nil {
		return Base{}, err
	}
	archive := exec.Command("sh", "-c", `git archive "$1" | tar -x -C "$2"`, "sh", b.Commit, b.Tree)
	archive.Dir = root
	if out, err := archive.CombinedOutput(); err != nil {
		return Base{}, fmt.Errorf("extracting %s: %v\n%s", b.Commit, err, out)
	}
	build := exec.Command("go", "build", "-trimpath", "-o", b.Binary, "./cmd/operator")
	build.Dir = b.Tree
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return Base{}, fmt.Errorf("building the operator of %s: %v\n%s", b.Commit, err, out)
	}
	return b, nil
}

// baseCommit reads hack/upgrade-base: its first line that is not a comment.
func baseCommit(root string) (string, error) {
	f, err := os.Open(filepath.Join(root, "hack", "upgrade-base"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if line := strings.TrimSpace(s.Text()); line != "" && !strings.HasPrefix(line, "#") {
			return line, nil
		}
	}
	return "", errors.New("hack/upgrade-base names no commit")
}

// haveCommit makes sure the clone holds commit, fetching it from origin when
// a shallow clone lacks it.
func haveCommit(root, commit string) error {
	has := func() bool { return exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run() == nil }
	if has() {
		return nil
	}
	out, err := exec.Command("git", "-C", root, "fetch", "--quiet", "origin", commit).CombinedOutput()
	if err != nil || !has() {
		return fmt.Errorf("the upgrade base %s (hack/upgrade-base) is not in this clone and fetching it failed: %v %s; "+
			"the test needs the repository's history (git fetch --unshallow)", commit, err, out)
	}
	return nil
}
