package operator

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
)

// The files of a certificate directory: the keys of a kubernetes.io/tls
// Secret, which cert-manager writes too.
const (
	certFile = "tls.crt"
	keyFile  = "tls.key"
)

// selfSignedHost is the name in a certificate made at start. No client can
// verify it, for nothing signs it: it only encrypts, and clients that want
// to verify the operator mount a certificate with --metrics-cert-dir.
const selfSignedHost = "lin-operator"

// certSource serves the certificate of an HTTPS endpoint.
type certSource interface {
	// GetCertificate is tls.Config's.
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Run keeps the certificate current until ctx is done.
	Run(ctx context.Context)
}

// newCertSource returns the certificate in dir's tls.crt and tls.key, kept
// current as they are replaced, or with dir empty, one made now.
func newCertSource(dir string) (certSource, error) {
	if dir == "" {
		s := &selfSigned{}
		if _, err := s.GetCertificate(nil); err != nil {
			return nil, err
		}
		return s, nil
	}
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("metrics",
		filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
	if err != nil {
		return nil, fmt.Errorf("--metrics-cert-dir: %w", err)
	}
	return &fileCert{content: content}, nil
}

// renewBefore is how long before it expires a self-signed certificate is
// made anew: an operator that runs for a year serves no expired one.
const renewBefore = 30 * 24 * time.Hour

// selfSigned is a certificate that the operator makes itself, for a year,
// and makes again a month before it expires.
type selfSigned struct {
	mu   sync.Mutex
	cert *tls.Certificate
}

// GetCertificate implements certSource.
func (s *selfSigned) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert != nil && time.Until(s.cert.Leaf.NotAfter) > renewBefore {
		return s.cert, nil
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(selfSignedHost, nil, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("making a self-signed certificate for /metrics: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("making a self-signed certificate for /metrics: %w", err)
	}
	s.cert = &cert
	return s.cert, nil
}

// Run implements certSource: GetCertificate renews the certificate itself.
func (*selfSigned) Run(context.Context) {}

// fileCert is the certificate of two files, which k8s.io/apiserver's
// dynamic serving content reloads when they change (a rotation by
// cert-manager, a Secret's new version in a volume), as the API server's own
// serving certificate is.
type fileCert struct {
	content *dynamiccertificates.DynamicCertKeyPairContent

	mu sync.Mutex
	// certPEM is the content that cert was parsed from.
	certPEM, keyPEM []byte
	cert            *tls.Certificate
}

// GetCertificate implements certSource; it parses the files' content again
// only when it changed.
func (f *fileCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	certPEM, keyPEM := f.content.CurrentCertKeyContent()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cert != nil && bytes.Equal(certPEM, f.certPEM) && bytes.Equal(keyPEM, f.keyPEM) {
		return f.cert, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	f.certPEM, f.keyPEM, f.cert = certPEM, keyPEM, &cert
	return f.cert, nil
}

// Run implements certSource.
func (f *fileCert) Run(ctx context.Context) { f.content.Run(ctx, 1) }

// serverTLS is the TLS configuration of an HTTPS endpoint with certs. It
// offers HTTP/1.1 alone, as kubebuilder's scaffold does: Prometheus scrapes
// over HTTP/1.1, and HTTP/2 would open the endpoint to its stream-flood
// attacks (CVE-2023-44487, CVE-2023-39325) for no gain.
func serverTLS(certs certSource) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: certs.GetCertificate,
		NextProtos:     []string{"http/1.1"},
	}
}
