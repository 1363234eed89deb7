package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// emulator is the ARM emulator's admin API: what its machines would boot, and the routes of its
// proxy.
type emulator struct {
	base string
	http *http.Client
}

func newEmulator(base, caFile string) (*emulator, error) {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	// The emulator is on this machine: never through a proxy the environment names.
	transport.Proxy = nil
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading the emulator's CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &emulator{
		base: strings.TrimSuffix(base, "/"),
		http: &http.Client{Transport: transport, Timeout: 30 * time.Second},
	}, nil
}

// machine is one emulated VM or scale-set instance with custom data, as the emulator reads it.
type machine struct {
	ID           string          `json:"id"`
	ComputerName string          `json:"computerName"`
	PowerState   string          `json:"powerState"`
	PrivateIPs   []string        `json:"privateIpAddresses"`
	Image        json.RawMessage `json:"imageReference"`
	Boot         *boot           `json:"boot"`
	Refused      string          `json:"refused"`
}

// boot is what cloud-init and kubeadm would do on a machine.
type boot struct {
	Role                 string            `json:"role"`
	NodeName             string            `json:"nodeName"`
	ControlPlaneEndpoint string            `json:"controlPlaneEndpoint"`
	KubernetesVersion    string            `json:"kubernetesVersion"`
	ClusterName          string            `json:"clusterName"`
	Keys                 map[string]string `json:"keys"`
	BootstrapToken       string            `json:"bootstrapToken"`
	NodeRegistration     nodeRegistration  `json:"nodeRegistration"`
	ClusterConfiguration json.RawMessage   `json:"clusterConfiguration"`
}

const (
	roleInit             = "init"
	roleJoinControlPlane = "joinControlPlane"
	roleJoinWorker       = "joinWorker"
)

func (b *boot) controlPlane() bool { return b.Role != roleJoinWorker }

// nodeRegistration is kubeadm's NodeRegistrationOptions, as far as the kubelet's registration
// goes.
type nodeRegistration struct {
	Taints *[]corev1.Taint `json:"taints"`
	// A list of {name, value} in kubeadm v1beta4, a map in v1beta3.
	KubeletExtraArgs json.RawMessage `json:"kubeletExtraArgs"`
}

// kubeletArg is one of kubeadm's extra kubelet arguments, whichever shape they were written in.
func (n nodeRegistration) kubeletArg(name string) string {
	var list []struct{ Name, Value string }
	if json.Unmarshal(n.KubeletExtraArgs, &list) == nil {
		for _, arg := range list {
			if arg.Name == name {
				return arg.Value
			}
		}
		return ""
	}
	var byName map[string]string
	if json.Unmarshal(n.KubeletExtraArgs, &byName) == nil {
		return byName[name]
	}
	return ""
}

// managedCluster is an AKS cluster the emulator runs: where its API server is reached, its CA,
// how callers sign in, and its pools' instances, which are its nodes.
type managedCluster struct {
	ID                string            `json:"id"`
	Name              string            `json:"name"`
	Endpoint          string            `json:"endpoint"`
	KubernetesVersion string            `json:"kubernetesVersion"`
	Keys              map[string]string `json:"keys"`
	Nodes             []managedNode     `json:"nodes"`
	// Entra integration without local accounts: the API server takes only Entra tokens of
	// TenantID (the AAD profile's tenant, else the subscription's).
	LocalAccountsDisabled bool   `json:"localAccountsDisabled"`
	TenantID              string `json:"tenantId"`
}

// managedNode is one instance of an AKS pool's scale set.
type managedNode struct {
	ID                string   `json:"id"`
	ComputerName      string   `json:"computerName"`
	Pool              string   `json:"pool"`
	Mode              string   `json:"mode"`
	PowerState        string   `json:"powerState"`
	PrivateIPs        []string `json:"privateIpAddresses"`
	KubernetesVersion string   `json:"kubernetesVersion"`
}

// boots is what runs on the emulator's machines: VMs and instances with bootstrap data, and AKS
// clusters with their nodes.
type boots struct {
	Machines        []machine        `json:"machines"`
	ManagedClusters []managedCluster `json:"managedClusters"`
}

func (e *emulator) boots(ctx context.Context) (*boots, error) {
	answer := &boots{}
	if err := e.do(ctx, http.MethodGet, "/_emulator/boots?keys=true", nil, answer); err != nil {
		return nil, err
	}
	return answer, nil
}

// route makes the emulator's proxy send connections for endpoint (host:port) to target.
func (e *emulator) route(ctx context.Context, endpoint, target string) error {
	body, err := routeBody(endpoint, target)
	if err != nil {
		return err
	}
	return e.do(ctx, http.MethodPut, "/_emulator/routes", body, nil)
}

func (e *emulator) unroute(ctx context.Context, endpoint string) error {
	body, err := routeBody(endpoint, "")
	if err != nil {
		return err
	}
	return e.do(ctx, http.MethodDelete, "/_emulator/routes", body, nil)
}

func routeBody(endpoint, target string) (map[string]any, error) {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return nil, fmt.Errorf("control plane endpoint %q is not host:port: %w", endpoint, err)
	}
	number, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("control plane endpoint %q has no numeric port", endpoint)
	}
	body := map[string]any{"host": host, "port": number}
	if target != "" {
		body["target"] = target
	}
	return body, nil
}

func (e *emulator) do(ctx context.Context, method, path string, body, into any) error {
	var reader io.Reader
	if body != nil {
		encoded, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reader = bytes.NewReader(encoded)
	}
	request, err := http.NewRequestWithContext(ctx, method, e.base+path, reader)
	if err != nil {
		return err
	}
	request.Header.Set("Content-Type", "application/json")
	response, err := e.http.Do(request)
	if err != nil {
		return err
	}
	defer response.Body.Close()
	text, err := io.ReadAll(response.Body)
	if err != nil {
		return err
	}
	if response.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, response.Status, strings.TrimSpace(string(text)))
	}
	if into == nil {
		return nil
	}
	return json.Unmarshal(text, into)
}

// imageVersion is the Kubernetes version a machine's image carries, as Cluster API's reference
// images name it: a version `1.33.5` (community gallery and shared images) or `133.5.20250101`
// (marketplace). Empty when the image does not say.
func imageVersion(image json.RawMessage) string {
	var reference struct {
		Version     string `json:"version"`
		CommunityID string `json:"communityGalleryImageId"`
		SharedID    string `json:"sharedGalleryImageId"`
		ID          string `json:"id"`
	}
	if json.Unmarshal(image, &reference) != nil {
		return ""
	}
	version := reference.Version
	for _, id := range []string{reference.CommunityID, reference.SharedID, reference.ID} {
		if at := strings.LastIndex(strings.ToLower(id), "/versions/"); at >= 0 {
			version = id[at+len("/versions/"):]
		}
	}
	if match := marketplace.FindStringSubmatch(version); match != nil {
		return fmt.Sprintf("v%s.%s.%s", match[1], match[2], match[3])
	}
	if match := semver.FindStringSubmatch(version); match != nil {
		return "v" + match[1]
	}
	return ""
}

var (
	semver      = regexp.MustCompile(`^v?(\d+\.\d+\.\d+)$`)
	marketplace = regexp.MustCompile(`^(1)(\d{2})\.(\d+)\.\d{8}$`)
)
