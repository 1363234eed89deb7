package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

// workloadCluster is one simulated workload cluster: its objects (a resource group of the
// in-memory store) and the API server and etcd members its control-plane machines serve, on one
// loopback listener the emulator's proxy routes the control plane endpoint to.
type workloadCluster struct {
	endpoint string
	name     string
	group    string
	version  string
	ca       *authority
	etcdCA   *authority
	client   inmemoryruntime.Client
	created  time.Time

	listener net.Listener
	server   *http.Server
	apiCert  *tls.Certificate

	mu        sync.Mutex
	etcdCerts map[string]*tls.Certificate

	// What runs in the cluster, as the simulator last saw it.
	cni string
	ccm string

	// An AKS cluster (its control plane is Azure's, with a CNI and cloud provider built in), and
	// whether the emulator still runs it.
	managed bool
	present bool

	// An AKS cluster whose API server takes only Entra tokens (of tenant, when known), and the
	// reasons it refused requests for, each logged once.
	entraOnly bool
	tenant    string
	refusals  map[string]bool
}

// newKubeadmCluster reads the authorities of the first control-plane machine's bootstrap data.
func newKubeadmCluster(b *boot, group string, client inmemoryruntime.Client) (*workloadCluster, error) {
	ca, err := loadAuthority(b.Keys["ca.crt"], b.Keys["ca.key"])
	if err != nil {
		return nil, fmt.Errorf("the cluster CA (/etc/kubernetes/pki/ca.crt, ca.key): %w", err)
	}
	etcdCA, err := loadAuthority(b.Keys["etcd/ca.crt"], b.Keys["etcd/ca.key"])
	if err != nil {
		return nil, fmt.Errorf("the etcd CA (/etc/kubernetes/pki/etcd/ca.crt, ca.key): %w", err)
	}
	return newWorkloadCluster(b.ControlPlaneEndpoint, b.ClusterName, b.KubernetesVersion, ca, etcdCA, group, client)
}

// newWorkloadCluster is a cluster served at endpoint with the certificates ca issues.
func newWorkloadCluster(endpoint, name, version string, ca, etcdCA *authority, group string, client inmemoryruntime.Client) (*workloadCluster, error) {
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		return nil, fmt.Errorf("the control plane endpoint %q is not host:port", endpoint)
	}
	// The names kubeadm puts in the API server's certificate that a client outside can use.
	apiCert, err := ca.issue("kube-apiserver",
		[]string{host, "kubernetes", "kubernetes.default", "kubernetes.default.svc", "localhost", "127.0.0.1"},
		x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	return &workloadCluster{
		endpoint:  endpoint,
		name:      name,
		group:     group,
		version:   version,
		ca:        ca,
		etcdCA:    etcdCA,
		client:    client,
		created:   time.Now(),
		apiCert:   apiCert,
		etcdCerts: map[string]*tls.Certificate{},
	}, nil
}

// serve starts the listener; handler answers the API server's and etcd's requests.
func (c *workloadCluster) serve(handler http.Handler) error {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	c.listener = listener
	c.server = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: c.certificate,
		},
	}
	go func() {
		if err := c.server.ServeTLS(listener, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error(err, "serving stopped", "cluster", c.name, "endpoint", c.endpoint)
		}
	}()
	return nil
}

// address is where the API server listens.
func (c *workloadCluster) address() string {
	if c.listener == nil {
		return ""
	}
	return c.listener.Addr().String()
}

func (c *workloadCluster) stop(ctx context.Context) {
	if c.server != nil {
		shutdown, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if c.server.Shutdown(shutdown) != nil {
			_ = c.server.Close()
		}
		c.server = nil
		c.listener = nil
	}
}

// certificate is the etcd member's when the client asks for one by name (as Cluster API's etcd
// client does, through a port-forward to the member's pod), else the API server's.
func (c *workloadCluster) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cert, ok := c.etcdCerts[hello.ServerName]; ok {
		return cert, nil
	}
	return c.apiCert, nil
}

// addEtcdMember gives the member etcd-<node> its serving certificate.
func (c *workloadCluster) addEtcdMember(pod string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.etcdCerts[pod]; ok {
		return nil
	}
	cert, err := c.etcdCA.issue(pod, []string{pod, "localhost", "127.0.0.1"},
		x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return err
	}
	c.etcdCerts[pod] = cert
	return nil
}

func (c *workloadCluster) removeEtcdMember(pod string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.etcdCerts, pod)
}

// refused records why a request was refused, telling whether it is the first time for that reason.
func (c *workloadCluster) refused(why string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refusals[why] {
		return false
	}
	if c.refusals == nil {
		c.refusals = map[string]bool{}
	}
	c.refusals[why] = true
	return true
}

// sameAuthority tells whether a joining control plane carries this cluster's CA.
func (c *workloadCluster) sameAuthority(certPEM string) bool {
	return strings.TrimSpace(certPEM) == strings.TrimSpace(c.ca.pem)
}
