package env

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// binaries are the programs Start needs from BinDir, by mode.
var binaries = map[Mode][]string{
	APIServer: {"etcd", "kube-apiserver", "kubectl"},
	Cluster:   {"etcd", "kube-apiserver", "kubectl", "kube-controller-manager", "kube-scheduler", "kwok"},
}

// RepoRoot returns the folder holding go.mod, found by walking up from the
// working directory. Tests run in their package's folder, so this finds the
// module root wherever the test lives.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found in the working directory or above it")
		}
		dir = parent
	}
}

var (
	binDirMu    sync.Mutex
	binDirCache = map[string]string{}
)

// ResolveBinDir returns the folder holding the control-plane binaries: dir if
// it is not empty, else the LIN_TOOLS_BIN environment variable, else the last
// line printed by hack/build-tools.sh, which builds whatever is missing into
// its cache. The script's answer is remembered for the life of the process, so
// that tests starting several environments run it once.
func ResolveBinDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("LIN_TOOLS_BIN")
	}
	if dir != "" {
		return filepath.Abs(dir)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("finding hack/build-tools.sh: %w", err)
	}
	binDirMu.Lock()
	defer binDirMu.Unlock()
	if dir, ok := binDirCache[root]; ok {
		return dir, nil
	}
	script := filepath.Join(root, "hack", "build-tools.sh")
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", script)
	cmd.Dir = root
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", script, err, lastLines(stderr.String(), logTailLines))
	}
	out := strings.TrimSpace(stdout.String())
	if out == "" {
		return "", fmt.Errorf("%s printed no bin folder", script)
	}
	dir = strings.TrimSpace(out[strings.LastIndexByte(out, '\n')+1:])
	binDirCache[root] = dir
	return dir, nil
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkBinaries fails early, with a useful message, when BinDir lacks a program
// the mode needs, rather than letting a start fail on a missing file.
func checkBinaries(binDir string, mode Mode) error {
	for _, name := range binaries[mode] {
		if st, err := os.Stat(filepath.Join(binDir, name)); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not an executable in %s; run hack/build-tools.sh", name, binDir)
		}
	}
	return nil
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a moment
// ago. All listeners stay open until every port is chosen so that the kernel
// cannot hand the same port out twice. A port can still be taken by another
// process before the program binds it; Start retries when that happens.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeServiceAccountKeys writes the key pair that kube-apiserver signs and
// verifies service account tokens with, and that kube-controller-manager is
// given too. A pair already in place is kept, so that tokens issued by an
// earlier run on the same Dir stay valid.
func writeServiceAccountKeys(keyPath, pubPath string) error {
	if _, err := os.Stat(keyPath); err == nil {
		if _, err := os.Stat(pubPath); err == nil {
			return nil
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pubPEM, 0o644)
}

// adminUser is the user the static token authenticates as. Membership in
// system:masters lets it do anything whatever RBAC says, which is what tests,
// the controllers and a developer's kubectl need.
const adminUser = "lin-admin"

// writeTokenFile writes kube-apiserver's static token file with one admin
// token and returns that token. An existing file is reused so that a
// kubeconfig written by an earlier run on the same Dir keeps working.
func writeTokenFile(path string) (string, error) {
	if data, err := os.ReadFile(path); err == nil {
		if token, _, ok := strings.Cut(string(data), ","); ok && token != "" {
			return token, nil
		}
	}
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b)
	// Format: token,user,uid,"group1,group2".
	line := token + "," + adminUser + "," + adminUser + `,"system:masters"` + "\n"
	return token, os.WriteFile(path, []byte(line), 0o600)
}

// writeKubeconfig writes a kubeconfig for the admin token. caData is the
// apiserver's self-generated serving certificate file, which also holds the CA
// that signed it.
func writeKubeconfig(path, server string, caData []byte, token string) error {
	const name = "lin-env"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: caData,
	}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}
