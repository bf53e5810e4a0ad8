package operator

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certutil "k8s.io/client-go/util/cert"
)

// leafNames returns the DNS names of the certificate that certs serves.
func leafNames(t *testing.T, certs certSource) []string {
	t.Helper()
	cert, err := certs.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.DNSNames
}

// writePair writes a self-signed certificate for host into dir.
func writePair(t *testing.T, dir, host string) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(host, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, certFile), certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, keyFile), keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestWithNoDirectoryTheCertificateIsMadeAtStart(t *testing.T) {
	certs, err := newCertSource("")
	if err != nil {
		t.Fatal(err)
	}
	if names := leafNames(t, certs); len(names) == 0 || names[0] != selfSignedHost {
		t.Errorf("the self-signed certificate names %v, want %s first", names, selfSignedHost)
	}
}

func TestTheMountedCertificateIsReloadedWhenItChanges(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "first.example")
	certs, err := newCertSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	if names := leafNames(t, certs); names[0] != "first.example" {
		t.Fatalf("serving %v, want first.example", names)
	}
	writePair(t, dir, "second.example")
	// What the file watch of Run triggers.
	if err := certs.(*fileCert).content.RunOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if names := leafNames(t, certs); names[0] != "second.example" {
		t.Errorf("serving %v after the files changed, want second.example", names)
	}
}

func TestAMissingOrBadCertificateNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	if _, err := newCertSource(dir); err == nil {
		t.Error("an empty directory gave no error")
	}
	if err := os.WriteFile(filepath.Join(dir, certFile), []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, keyFile), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := newCertSource(dir)
	if err == nil || !strings.Contains(err.Error(), "--metrics-cert-dir") {
		t.Errorf("a bad certificate gave %v, want an error naming --metrics-cert-dir", err)
	}
}

func TestASelfSignedCertificateIsMadeAgainBeforeItExpires(t *testing.T) {
	certs, err := newCertSource("")
	if err != nil {
		t.Fatal(err)
	}
	first, err := certs.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := certs.GetCertificate(nil); again != first {
		t.Error("a certificate far from its expiry was made again")
	}
	first.Leaf.NotAfter = time.Now().Add(renewBefore - time.Hour)
	renewed, err := certs.GetCertificate(nil)
	if err != nil || renewed == first || time.Until(renewed.Leaf.NotAfter) < renewBefore {
		t.Errorf("a certificate within %v of its expiry: %v, renewed until %v", renewBefore, err, renewed.Leaf.NotAfter)
	}
}
