package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// makeVariables reads the simple assignments (NAME := value, NAME ?= value,
// NAME = value) of a Makefile.
func makeVariables(makefile string) map[string]string {
	vars := map[string]string{}
	assign := regexp.MustCompile(`^([A-Z_]+)\s*[:?]?=\s*(.*)$`)
	for _, line := range strings.Split(makefile, "\n") {
		if m := assign.FindStringSubmatch(line); m != nil {
			vars[m[1]] = strings.TrimSpace(m[2])
		}
	}
	return vars
}

// expandMake replaces $(NAME) in s with the variables' values, recursively.
func expandMake(s string, vars map[string]string) string {
	ref := regexp.MustCompile(`\$\(([A-Z_]+)\)`)
	for range 10 {
		next := ref.ReplaceAllStringFunc(s, func(r string) string { return vars[r[2:len(r)-1]] })
		if next == s {
			break
		}
		s = next
	}
	return s
}

// MakefileBuild returns the build target's command line, expanded: the
// Makefile's GO_BUILD with the output and the package.
func MakefileBuild(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		return "", err
	}
	makefile := string(data)
	recipe := regexp.MustCompile(`(?m)^build:.*\n\t(.*)$`).FindStringSubmatch(makefile)
	if recipe == nil {
		return "", errors.New("the Makefile has no build target")
	}
	vars := makeVariables(makefile)
	vars["GO"] = "go"
	return expandMake(recipe[1], vars), nil
}

// splitWords splits a shell command line into words, honouring single and
// double quotes (without escapes, which the build commands do not use).
func splitWords(s string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// BuildCommand splits a build command line into its environment
// assignments and its argv, with the output path after -o replaced by out.
func BuildCommand(line, out string) (envs, argv []string, err error) {
	words, err := splitWords(line)
	if err != nil {
		return nil, nil, err
	}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		envs, words = append(envs, words[0]), words[1:]
	}
	if i := slices.Index(words, "-o"); i >= 0 && i+1 < len(words) {
		words[i+1] = out
	}
	return envs, words, nil
}

// BuildOperator builds the operator into out with the Makefile's command.
func BuildOperator(root, out string) error {
	line, err := MakefileBuild(root)
	if err != nil {
		return err
	}
	envs, argv, err := BuildCommand(line, out)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), envs...)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", line, err, output)
	}
	return nil
}

// GoBuild builds the package pkg of the Go module at dir into out with a
// plain go build.
func GoBuild(dir, pkg, out string) error {
	build := exec.Command("go", "build", "-o", out, pkg)
	build.Dir = dir
	if output, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s in %s: %w\n%s", pkg, dir, err, output)
	}
	return nil
}

// BuildKubectlLin builds the kubectl plugin of the repository at root into
// dir, as kubectl-lin, and returns its path.
func BuildKubectlLin(root, dir string) (string, error) {
	out := filepath.Join(dir, "kubectl-lin")
	return out, GoBuild(root, "./cmd/kubectl-lin", out)
}
