package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	inmemoryapi "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server/api"
	inmemoryetcd "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server/etcd"
)

// machineState is what the simulator knows of one machine: how far it got into its cluster.
type machineState struct {
	id            string
	nodeName      string
	role          string
	controlPlane  bool
	externalCloud bool
	providerID    string
	privateIPs    []string
	powerState    string
	version       string
	cluster       *workloadCluster
	firstRunning  time.Time

	joined      bool
	waiting     string
	failed      string
	gone        bool
	nodeDeleted bool
}

// simulator turns the emulator's machines into workload clusters.
type simulator struct {
	manager     inmemoryruntime.Manager
	emulator    *emulator
	joinTimeout time.Duration
	// How often a running kubelet posts its node's status when nothing changed.
	statusReport time.Duration
	handler      http.Handler
	signIn       *entraSignIn

	mu       sync.Mutex
	clusters map[string]*workloadCluster // by control plane endpoint, lower case
	byPort   map[string]*workloadCluster
	machines map[string]*machineState // by machine ID, lower case
	serial   int
}

func newSimulator(manager inmemoryruntime.Manager, emulator *emulator, log logr.Logger, joinTimeout, statusReport time.Duration) *simulator {
	s := &simulator{
		manager:      manager,
		emulator:     emulator,
		joinTimeout:  joinTimeout,
		statusReport: statusReport,
		clusters:     map[string]*workloadCluster{},
		byPort:       map[string]*workloadCluster{},
		machines:     map[string]*machineState{},
		signIn:       newEntraSignIn(emulator),
	}
	resolve := func(host string) (string, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		cluster, err := s.listening(host)
		if err != nil {
			return "", err
		}
		return cluster.group, nil
	}
	api := inmemoryapi.NewAPIServerHandler(manager, log, resolve)
	etcd := inmemoryetcd.NewEtcdServerHandler(manager, log, resolve)
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Clients name the endpoint; the handlers find the cluster, and port-forwards their
		// target, by the listener the request came in on.
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			r.Host = local.String()
		}
		if !s.signedIn(w, r) {
			return
		}
		if r.ProtoMajor == 2 && strings.HasPrefix(r.Header.Get("Content-Type"), "application/grpc") {
			etcd.ServeHTTP(w, r)
			return
		}
		eviction := evictionPath.FindStringSubmatch(r.URL.Path)
		node, isNodes := strings.CutPrefix(r.URL.Path, "/api/v1/nodes")
		isNodes = isNodes && (node == "" || !strings.Contains(node[1:], "/"))
		if (eviction != nil && r.Method == http.MethodPost) || (isNodes && wantsTable(r)) {
			group, err := resolve(r.Host)
			if err != nil {
				http.Error(w, err.Error(), http.StatusNotFound)
				return
			}
			client := s.manager.GetResourceGroup(group).GetClient()
			if eviction != nil {
				evict(w, r, client, eviction[1], eviction[2])
			} else {
				nodeTable(w, r, client, strings.TrimPrefix(node, "/"))
			}
			return
		}
		api.ServeHTTP(w, r)
	})
	return s
}

// listening is the cluster whose listener is at host; s.mu is held.
func (s *simulator) listening(host string) (*workloadCluster, error) {
	_, port, err := net.SplitHostPort(host)
	if err != nil {
		return nil, err
	}
	cluster, ok := s.byPort[port]
	if !ok {
		return nil, fmt.Errorf("no workload cluster listens on %s", host)
	}
	return cluster, nil
}

// signedIn tells whether the request may go on to the API server, having answered 401 as
// kube-apiserver does when it may not: an AKS cluster with Entra integration and no local
// accounts takes only the emulator's Entra tokens for AKS's server application. Other clusters
// are reached with client certificates, which go unchecked.
func (s *simulator) signedIn(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	cluster, err := s.listening(r.Host)
	entraOnly, tenant := err == nil && cluster.entraOnly, ""
	if entraOnly {
		tenant = cluster.tenant
	}
	s.mu.Unlock()
	if !entraOnly {
		// Without a cluster there, the API handler answers that none is.
		return true
	}
	why := s.signIn.check(tenant, r.Header.Get("Authorization"))
	if why == "" {
		return true
	}
	if cluster.refused(why) {
		logger.Info("the API server refuses a request", "cluster", cluster.name, "endpoint", cluster.endpoint, "reason", why)
	}
	writeUnauthorized(w)
	return false
}

// run polls the emulator every interval until ctx ends.
func (s *simulator) run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := s.tick(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "reading the emulator's machines")
		}
		select {
		case <-ctx.Done():
			s.mu.Lock()
			for _, cluster := range s.clusters {
				cluster.stop(context.Background())
			}
			s.mu.Unlock()
			return
		case <-ticker.C:
		}
	}
}

func (s *simulator) tick(ctx context.Context) error {
	boots, err := s.emulator.boots(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for _, cluster := range s.clusters {
		cluster.present = false
	}
	for i := range boots.ManagedClusters {
		managed := &boots.ManagedClusters[i]
		s.guarded("running managed cluster "+managed.ID, func() { s.runManaged(ctx, managed, seen) })
	}
	machines := boots.Machines
	for i := range machines {
		m := &machines[i]
		key := strings.ToLower(m.ID)
		seen[key] = true
		state, known := s.machines[key]
		if m.Boot == nil {
			// Data cloud-init or kubeadm would not take: the machine runs, and never joins.
			if !known {
				s.machines[key] = &machineState{id: m.ID, nodeName: m.ComputerName, failed: m.Refused}
			}
			continue
		}
		if !known {
			state = &machineState{
				id:            m.ID,
				nodeName:      m.Boot.NodeName,
				role:          m.Boot.Role,
				controlPlane:  m.Boot.controlPlane(),
				externalCloud: m.Boot.NodeRegistration.kubeletArg("cloud-provider") == "external",
				providerID:    providerID(m.ID),
			}
			s.machines[key] = state
		}
		state.powerState, state.privateIPs = m.PowerState, m.PrivateIPs
		if state.powerState == "running" && state.firstRunning.IsZero() {
			state.firstRunning = time.Now()
		}
		if !state.joined && state.failed == "" {
			s.guarded("booting "+m.ID, func() { s.boot(ctx, state, m) })
		}
	}
	for key, state := range s.machines {
		if !seen[key] {
			state.gone = true
		}
	}
	for _, cluster := range s.clusters {
		s.guarded("syncing cluster "+cluster.name, func() { s.syncCluster(ctx, cluster) })
	}
	for key, state := range s.machines {
		// Forgotten once nothing of it is left: no node, or it never joined.
		if state.gone && (state.nodeDeleted || !state.joined) {
			delete(s.machines, key)
		}
	}
	return nil
}

// guarded runs work, logging a panic instead of dying of it: every other cluster the process
// simulates would be lost with it.
func (s *simulator) guarded(what string, work func()) {
	defer func() {
		if failure := recover(); failure != nil {
			logger.Error(fmt.Errorf("%v", failure), "a bug in the simulator", "while", what, "stack", string(debug.Stack()))
		}
	}()
	work()
}

// boot does what cloud-init and kubeadm would on a running machine, or records what it waits
// for; a join that waits longer than kubeadm's discovery timeout fails for good.
func (s *simulator) boot(ctx context.Context, state *machineState, m *machine) {
	if m.PowerState != "running" {
		state.waiting = "the machine is not running"
		return
	}
	b := m.Boot
	state.version = b.KubernetesVersion
	if state.version == "" {
		state.version = imageVersion(m.Image)
	}
	endpoint := strings.ToLower(b.ControlPlaneEndpoint)
	cluster := s.clusters[endpoint]
	if b.Role == roleInit {
		if cluster != nil && s.servedBy(cluster) {
			state.failed = fmt.Sprintf("kubeadm init: %s already answers for a running control plane", b.ControlPlaneEndpoint)
			return
		}
		if cluster != nil {
			s.removeCluster(ctx, endpoint, cluster)
		}
		created, err := s.createCluster(ctx, b)
		if err != nil {
			state.failed = "kubeadm init: " + err.Error()
			logger.Info("a machine does not initialize its cluster", "machine", m.ID, "reason", state.failed)
			return
		}
		cluster = created
		s.clusters[endpoint] = cluster
	} else {
		why := ""
		switch {
		case cluster == nil || cluster.server == nil:
			why = fmt.Sprintf("no API server answers at %s", b.ControlPlaneEndpoint)
		case b.Role == roleJoinControlPlane && !cluster.sameAuthority(b.Keys["ca.crt"]):
			state.failed = "kubeadm join: the machine's cluster CA is not the one the API server at " + b.ControlPlaneEndpoint + " serves with"
			return
		default:
			why = tokenAccepted(ctx, cluster.client, b.BootstrapToken)
		}
		if why != "" {
			state.waiting = "kubeadm join: " + why
			if time.Since(state.firstRunning) > s.joinTimeout {
				state.failed = state.waiting
				logger.Info("a machine gives up joining", "machine", m.ID, "reason", state.failed)
			}
			return
		}
	}
	if state.version == "" {
		state.version = cluster.version
	}
	if err := s.join(ctx, state, registration{controlPlane: b.controlPlane(), taints: b.NodeRegistration.Taints}, cluster); err != nil {
		state.waiting = err.Error()
		return
	}
	state.joined, state.waiting, state.cluster = true, "", cluster
	logger.Info("a machine joined its cluster", "machine", m.ID, "node", state.nodeName, "role", b.Role, "cluster", cluster.name)
}

func (s *simulator) createCluster(ctx context.Context, b *boot) (*workloadCluster, error) {
	s.serial++
	group := fmt.Sprintf("%s-%d", b.ClusterName, s.serial)
	s.manager.AddResourceGroup(group)
	cluster, err := newKubeadmCluster(b, group, s.manager.GetResourceGroup(group).GetClient())
	if err != nil {
		s.manager.DeleteResourceGroup(group)
		return nil, err
	}
	if err := initialize(ctx, cluster.client, b); err != nil {
		s.manager.DeleteResourceGroup(group)
		return nil, err
	}
	return cluster, nil
}

// join registers the machine's node; a control-plane machine also starts its static pods, its
// etcd member and (the first one) the API server behind the endpoint.
func (s *simulator) join(ctx context.Context, state *machineState, r registration, cluster *workloadCluster) error {
	if err := register(ctx, cluster.client, state, r); err != nil {
		return err
	}
	if !state.controlPlane {
		return nil
	}
	if err := staticPods(ctx, cluster.client, state.nodeName, state.version); err != nil {
		return err
	}
	if err := cluster.addEtcdMember("etcd-" + state.nodeName); err != nil {
		return err
	}
	return s.serve(ctx, cluster)
}

// serve starts the cluster's API server, unless it runs, and has the emulator's proxy route the
// endpoint to it.
func (s *simulator) serve(ctx context.Context, cluster *workloadCluster) error {
	if cluster.server == nil {
		if err := cluster.serve(s.handler); err != nil {
			return fmt.Errorf("starting the API server: %w", err)
		}
		_, port, _ := net.SplitHostPort(cluster.address())
		s.byPort[port] = cluster
		if err := s.emulator.route(ctx, cluster.endpoint, cluster.address()); err != nil {
			return fmt.Errorf("routing %s to the API server: %w", cluster.endpoint, err)
		}
	}
	return nil
}

// servedBy tells whether a control-plane machine of the cluster still runs (for AKS: whether
// the emulator still runs the cluster).
func (s *simulator) servedBy(cluster *workloadCluster) bool {
	if cluster.managed {
		return cluster.present
	}
	for _, state := range s.machines {
		if state.cluster == cluster && state.controlPlane && !state.gone {
			return true
		}
	}
	return false
}

func (s *simulator) removeCluster(ctx context.Context, endpoint string, cluster *workloadCluster) {
	if cluster.server != nil {
		_, port, _ := net.SplitHostPort(cluster.address())
		delete(s.byPort, port)
		cluster.stop(ctx)
		if err := s.emulator.unroute(ctx, cluster.endpoint); err != nil {
			logger.Error(err, "removing a route", "endpoint", cluster.endpoint)
		}
	}
	s.manager.DeleteResourceGroup(cluster.group)
	delete(s.clusters, endpoint)
	// Its machines start over: those still running find no API server to join.
	for key, state := range s.machines {
		if state.cluster == cluster {
			delete(s.machines, key)
		}
	}
}

// syncCluster follows the cluster's add-ons onto its nodes, and takes the cluster away once no
// control-plane machine of it is left.
func (s *simulator) syncCluster(ctx context.Context, cluster *workloadCluster) {
	if !s.servedBy(cluster) {
		logger.Info("the last control-plane machine of a cluster is gone", "cluster", cluster.name, "endpoint", cluster.endpoint)
		s.removeCluster(ctx, strings.ToLower(cluster.endpoint), cluster)
		return
	}
	if !cluster.managed {
		cni, ccm, err := addOns(ctx, cluster.client)
		if err != nil {
			logger.Error(err, "reading add-ons", "cluster", cluster.name)
			return
		}
		if cni != cluster.cni || ccm != cluster.ccm {
			logger.Info("add-ons", "cluster", cluster.name, "cni", cni, "cloudControllerManager", ccm)
		}
		cluster.cni, cluster.ccm = cni, ccm
	}
	for _, state := range s.machines {
		if state.cluster != cluster || !state.joined {
			continue
		}
		if err := syncNode(ctx, cluster.client, state, cluster, s.statusReport); err != nil {
			logger.Error(err, "syncing a node", "cluster", cluster.name, "node", state.nodeName)
		}
	}
	removed, err := collectPods(ctx, cluster.client)
	if err != nil {
		logger.Error(err, "collecting the pods of deleted nodes", "cluster", cluster.name)
	}
	for _, member := range removed {
		cluster.removeEtcdMember(member)
	}
	if err := runDeployments(ctx, cluster.client); err != nil {
		logger.Error(err, "running Deployments", "cluster", cluster.name)
	}
}

// clusterStatus is one cluster on the status endpoint.
type clusterStatus struct {
	Endpoint               string          `json:"endpoint"`
	Name                   string          `json:"name"`
	Address                string          `json:"address,omitempty"`
	CNI                    string          `json:"cni,omitempty"`
	CloudControllerManager string          `json:"cloudControllerManager,omitempty"`
	Machines               []machineStatus `json:"machines"`
}

type machineStatus struct {
	ID       string `json:"id"`
	Node     string `json:"node"`
	Role     string `json:"role"`
	Joined   bool   `json:"joined"`
	Waiting  string `json:"waiting,omitempty"`
	Failed   string `json:"failed,omitempty"`
	Gone     bool   `json:"gone,omitempty"`
	Endpoint string `json:"-"`
}

// status is every cluster with its machines, and the machines that belong to none.
func (s *simulator) status() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	clusters := []clusterStatus{}
	for _, cluster := range s.clusters {
		entry := clusterStatus{
			Endpoint: cluster.endpoint, Name: cluster.name, Address: cluster.address(),
			CNI: cluster.cni, CloudControllerManager: cluster.ccm, Machines: []machineStatus{},
		}
		for _, state := range s.machines {
			if state.cluster == cluster {
				entry.Machines = append(entry.Machines, state.status())
			}
		}
		sort.Slice(entry.Machines, func(i, j int) bool { return entry.Machines[i].Node < entry.Machines[j].Node })
		clusters = append(clusters, entry)
	}
	sort.Slice(clusters, func(i, j int) bool { return clusters[i].Endpoint < clusters[j].Endpoint })
	unjoined := []machineStatus{}
	for _, state := range s.machines {
		if state.cluster == nil {
			unjoined = append(unjoined, state.status())
		}
	}
	sort.Slice(unjoined, func(i, j int) bool { return unjoined[i].ID < unjoined[j].ID })
	return map[string]any{"clusters": clusters, "unjoined": unjoined}
}

func (m *machineState) status() machineStatus {
	return machineStatus{ID: m.id, Node: m.nodeName, Role: m.role, Joined: m.joined, Waiting: m.waiting, Failed: m.failed, Gone: m.gone}
}

// providerID is the provider ID cloud-provider-azure gives the node of the VM or scale-set
// instance id: "azure://" and the id, its resource group in lower case (an AKS node resource
// group such as MC_group_cluster_region shows as mc_group_cluster_region).
func providerID(id string) string {
	segments := strings.Split(id, "/")
	for i := 0; i+1 < len(segments); i++ {
		if strings.EqualFold(segments[i], "resourceGroups") {
			segments[i+1] = strings.ToLower(segments[i+1])
			break
		}
	}
	return "azure://" + strings.Join(segments, "/")
}
