package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

// The annotations Cluster API's in-memory etcd server reads its members from, on each etcd pod.
const (
	etcdClusterIDAnnotation  = "etcd.inmemory.infrastructure.cluster.x-k8s.io/cluster-id"
	etcdMemberIDAnnotation   = "etcd.inmemory.infrastructure.cluster.x-k8s.io/member-id"
	etcdLeaderFromAnnotation = "etcd.inmemory.infrastructure.cluster.x-k8s.io/leader-from"
	etcdMemberRemoved        = "etcd.inmemory.infrastructure.cluster.x-k8s.io/member-removed"
)

const corednsVersion = "v1.12.1"

// controlPlaneComponents are the static pods kubeadm writes on every control-plane machine.
var controlPlaneComponents = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// initialize writes what `kubeadm init` leaves in a new cluster: the objects every cluster
// starts with (see [baseObjects]), the configuration kubeadm uploads, and the RBAC that lets
// bootstrap tokens join nodes.
func initialize(ctx context.Context, c inmemoryruntime.Client, b *boot) error {
	clusterConfiguration, err := yaml.JSONToYAML(b.ClusterConfiguration)
	if err != nil || len(b.ClusterConfiguration) == 0 {
		clusterConfiguration = []byte{}
	}
	objects := append(baseObjects(b.KubernetesVersion),
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kubeadm-config"},
			Data:       map[string]string{"ClusterConfiguration": string(clusterConfiguration)},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kubelet-config"},
			Data: map[string]string{"kubelet": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" +
				"cgroupDriver: systemd\nclusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\n"},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespacePublic, Name: "cluster-info"},
			Data:       map[string]string{"kubeconfig": clusterInfo(b)},
		},
		&rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:get-nodes"},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:get-nodes"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeadm:get-nodes"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:bootstrappers:kubeadm:default-node-token"}},
		},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "kubeadm:kubelet-bootstrap"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node-bootstrapper"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:bootstrappers:kubeadm:default-node-token"}},
		},
	)
	return create(ctx, c, objects)
}

// baseObjects are what every cluster starts with, kubeadm's or AKS's: the namespaces, kube-proxy
// (ConfigMap and DaemonSet at the cluster's version) and CoreDNS (Corefile, Deployment, Service).
func baseObjects(version string) []client.Object {
	objects := []client.Object{}
	for _, name := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease} {
		objects = append(objects, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	return append(objects,
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kube-proxy", Labels: map[string]string{"app": "kube-proxy"}},
			Data:       map[string]string{"config.conf": "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\n"},
		},
		&appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kube-proxy", Labels: map[string]string{"k8s-app": "kube-proxy"}},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-proxy"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"k8s-app": "kube-proxy"}},
					Spec: corev1.PodSpec{
						HostNetwork: true,
						Containers:  []corev1.Container{{Name: "kube-proxy", Image: "registry.k8s.io/kube-proxy:" + version}},
					},
				},
			},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "coredns"},
			Data: map[string]string{"Corefile": `.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30
    loop
    reload
    loadbalance
}
`},
		},
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "coredns", Labels: map[string]string{"k8s-app": "kube-dns"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"k8s-app": "kube-dns"}},
					Spec: corev1.PodSpec{
						Containers: []corev1.Container{{Name: "coredns", Image: "registry.k8s.io/coredns/coredns:" + corednsVersion}},
						Tolerations: []corev1.Toleration{
							{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
							{Key: taintControlPlane, Effect: corev1.TaintEffectNoSchedule},
						},
					},
				},
			},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "kube-dns", Labels: map[string]string{"k8s-app": "kube-dns"}},
			Spec: corev1.ServiceSpec{
				ClusterIP: "10.96.0.10",
				Selector:  map[string]string{"k8s-app": "kube-dns"},
				Ports:     []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}},
			},
		},
	)
}

func create(ctx context.Context, c inmemoryruntime.Client, objects []client.Object) error {
	for _, object := range objects {
		if err := c.Create(ctx, object); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", object, object.GetName(), err)
		}
	}
	return nil
}

// clusterInfo is the kubeconfig kubeadm publishes in kube-public for nodes discovering the
// cluster: its endpoint and CA, no credentials.
func clusterInfo(b *boot) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: \"\"\n  cluster:\n    certificate-authority-data: %s\n    server: https://%s\n",
		base64.StdEncoding.EncodeToString([]byte(b.Keys["ca.crt"])), b.ControlPlaneEndpoint)
}

// tokenAccepted tells why a join's bootstrap token would not let it in, or "" when it would:
// kubeadm looks it up as a Secret kube-system/bootstrap-token-<id>, which the bootstrap provider
// writes there before it hands the machine its data.
func tokenAccepted(ctx context.Context, c inmemoryruntime.Client, token string) string {
	id, secret, ok := strings.Cut(token, ".")
	if !ok {
		return "the bootstrap token is not <id>.<secret>"
	}
	stored := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}, stored); err != nil {
		return fmt.Sprintf("the cluster does not know bootstrap token %s", id)
	}
	value := func(key string) string {
		if data, ok := stored.Data[key]; ok {
			return string(data)
		}
		return stored.StringData[key]
	}
	if value("token-secret") != secret {
		return fmt.Sprintf("bootstrap token %s has another secret in the cluster", id)
	}
	if value("usage-bootstrap-authentication") != "true" {
		return fmt.Sprintf("bootstrap token %s may not authenticate", id)
	}
	if expiration := value("expiration"); expiration != "" {
		if at, err := time.Parse(time.RFC3339, expiration); err == nil && time.Now().After(at) {
			return fmt.Sprintf("bootstrap token %s expired at %s", id, expiration)
		}
	}
	return ""
}

// staticPods writes the mirror pods of a control-plane node's static pods and makes its etcd
// member part of the cluster (the first one leads).
func staticPods(ctx context.Context, c inmemoryruntime.Client, node, version string) error {
	members, err := etcdMembers(ctx, c)
	if err != nil {
		return err
	}
	for _, component := range controlPlaneComponents {
		image := "registry.k8s.io/" + component + ":" + version
		if component == "etcd" {
			image = "registry.k8s.io/etcd:3.6.4-0"
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: metav1.NamespaceSystem,
				Name:      component + "-" + node,
				Labels:    map[string]string{"component": component, "tier": "control-plane"},
				Annotations: map[string]string{
					"kubernetes.io/config.source": "file",
					"kubernetes.io/config.mirror": component + "-" + node,
				},
			},
			Spec: corev1.PodSpec{
				NodeName:    node,
				HostNetwork: true,
				Containers:  []corev1.Container{{Name: component, Image: image}},
			},
			Status: corev1.PodStatus{
				Phase:      corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			},
		}
		if component == "etcd" {
			pod.Annotations[etcdClusterIDAnnotation] = members.clusterID
			pod.Annotations[etcdMemberIDAnnotation] = members.newID()
			if members.leader == "" {
				pod.Annotations[etcdLeaderFromAnnotation] = time.Now().UTC().Format(time.RFC3339)
			}
		}
		if err := c.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating static pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// etcdCluster is the membership the etcd pods record.
type etcdCluster struct {
	clusterID string
	leader    string
	ids       map[string]bool
	pods      []corev1.Pod
}

func etcdMembers(ctx context.Context, c inmemoryruntime.Client) (*etcdCluster, error) {
	pods, err := list[corev1.Pod](ctx, c, "v1", "Pod", client.InNamespace(metav1.NamespaceSystem),
		client.MatchingLabels{"component": "etcd", "tier": "control-plane"})
	if err != nil {
		return nil, fmt.Errorf("listing etcd members: %w", err)
	}
	members := &etcdCluster{ids: map[string]bool{}}
	var leaderFrom time.Time
	for _, pod := range pods {
		if _, removed := pod.Annotations[etcdMemberRemoved]; removed {
			continue
		}
		members.pods = append(members.pods, pod)
		members.clusterID = pod.Annotations[etcdClusterIDAnnotation]
		members.ids[pod.Annotations[etcdMemberIDAnnotation]] = true
		if from, err := time.Parse(time.RFC3339, pod.Annotations[etcdLeaderFromAnnotation]); err == nil && from.After(leaderFrom) {
			leaderFrom, members.leader = from, pod.Name
		}
	}
	if members.clusterID == "" {
		members.clusterID = strconv.FormatUint(uint64(rand.Uint32N(1<<31-1))+1, 10)
	}
	return members, nil
}

// newID is a member ID no member has (etcd's are never 0).
func (m *etcdCluster) newID() string {
	for {
		id := strconv.FormatUint(uint64(rand.Uint32N(1<<31-1))+1, 10)
		if !m.ids[id] {
			m.ids[id] = true
			return id
		}
	}
}

// collectPods deletes the pods bound to nodes that no longer exist, as the pod garbage collector
// does (mirror pods among them, so a deleted control-plane node's etcd member leaves the member
// list); if the etcd leader went with them, another member leads, as etcd would elect one. It
// returns the etcd pods it deleted.
func collectPods(ctx context.Context, c inmemoryruntime.Client) ([]string, error) {
	nodes, err := list[corev1.Node](ctx, c, "v1", "Node")
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	existing := map[string]bool{}
	for _, node := range nodes {
		existing[node.Name] = true
	}
	pods, err := list[corev1.Pod](ctx, c, "v1", "Pod")
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	removed := []string{}
	for i := range pods {
		pod := &pods[i]
		if pod.Spec.NodeName == "" || existing[pod.Spec.NodeName] {
			continue
		}
		if err := c.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting pod %s of a deleted node: %w", pod.Name, err)
		}
		if pod.Labels["component"] == "etcd" {
			removed = append(removed, pod.Name)
		}
	}
	if len(removed) == 0 {
		return nil, nil
	}
	members, err := etcdMembers(ctx, c)
	if err != nil || members.leader != "" || len(members.pods) == 0 {
		return removed, err
	}
	successor := &members.pods[0]
	successor.Annotations[etcdLeaderFromAnnotation] = time.Now().UTC().Format(time.RFC3339)
	if err := c.Update(ctx, successor); err != nil {
		return removed, fmt.Errorf("electing %s: %w", successor.Name, err)
	}
	return removed, nil
}
