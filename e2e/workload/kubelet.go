package main

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

// The taints Kubernetes puts on nodes that cannot take work yet.
const (
	taintUninitialized = "node.cloudprovider.kubernetes.io/uninitialized"
	taintNotReady      = "node.kubernetes.io/not-ready"
	taintUnreachable   = "node.kubernetes.io/unreachable"
	taintControlPlane  = "node-role.kubernetes.io/control-plane"
)

// registration is how a kubelet is told to register its Node.
type registration struct {
	controlPlane bool
	// As configured; nil gives kubeadm's default (control planes tainted).
	taints *[]corev1.Taint
	labels map[string]string
}

// register is the kubelet's first start: it creates its Node, tainted until a cloud provider
// initializes it (kubelet `cloud-provider: external`) and until the network is ready.
func register(ctx context.Context, c inmemoryruntime.Client, m *machineState, r registration) error {
	labels := map[string]string{
		"kubernetes.io/hostname":  m.nodeName,
		"kubernetes.io/os":        "linux",
		"kubernetes.io/arch":      "amd64",
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": "amd64",
	}
	for key, value := range r.labels {
		labels[key] = value
	}
	var taints []corev1.Taint
	if r.taints != nil {
		taints = append(taints, *r.taints...)
	} else if r.controlPlane {
		taints = append(taints, corev1.Taint{Key: taintControlPlane, Effect: corev1.TaintEffectNoSchedule})
	}
	if r.controlPlane {
		labels[taintControlPlane] = ""
		labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
	}
	if m.externalCloud {
		taints = append(taints, corev1.Taint{Key: taintUninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
	taints = append(taints, corev1.Taint{Key: taintNotReady, Effect: corev1.TaintEffectNoSchedule})
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: m.nodeName, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          m.version,
				OSImage:                 "Ubuntu 24.04.3 LTS",
				KernelVersion:           "6.8.0-1041-azure",
				ContainerRuntimeVersion: "containerd://1.7.28",
				OperatingSystem:         "linux",
				Architecture:            "amd64",
			},
		},
	}
	setConditions(node, corev1.ConditionFalse, "KubeletNotReady", notReadyMessage, 0)
	if err := c.Create(ctx, node); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("registering node %s: %w", m.nodeName, err)
		}
		// A machine that takes the name of an earlier one re-registers over its Node.
		existing := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(node), existing); err != nil {
			return err
		}
		existing.Labels, existing.Spec, existing.Status = node.Labels, node.Spec, node.Status
		if err := c.Update(ctx, existing); err != nil {
			return fmt.Errorf("registering node %s again: %w", m.nodeName, err)
		}
	}
	return nil
}

// reportKubeletVersion is a kubelet back from a reimage at `version`: its Node says so.
func reportKubeletVersion(ctx context.Context, c inmemoryruntime.Client, nodeName, version string) error {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: nodeName}, node); err != nil {
		return fmt.Errorf("reading node %s: %w", nodeName, err)
	}
	node.Status.NodeInfo.KubeletVersion = version
	if err := c.Update(ctx, node); err != nil {
		return fmt.Errorf("updating node %s to %s: %w", nodeName, version, err)
	}
	return nil
}

const notReadyMessage = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"

// setConditions gives the node these conditions. Times move only when a condition does, or, for
// a kubelet that still runs, when its last report is `report` old: a kubelet posts its status at
// least that often (its nodeStatusReportFrequency) even when nothing changed. Those heartbeats
// are what wakes Cluster API's MachinePool controller to count Machines that turned Ready after
// its last pass; it watches Nodes, not Machines. A report of 0 writes a steady node never.
func setConditions(node *corev1.Node, ready corev1.ConditionStatus, reason, message string, report time.Duration) {
	conditions := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: ready, Reason: reason, Message: message},
	}
	if ready == corev1.ConditionUnknown {
		for i := range conditions[:3] {
			conditions[i].Status, conditions[i].Reason, conditions[i].Message = corev1.ConditionUnknown, reason, message
		}
	}
	now := metav1.Now()
	posting := ready != corev1.ConditionUnknown && report > 0
	for i := range conditions {
		conditions[i].LastHeartbeatTime, conditions[i].LastTransitionTime = now, now
		for _, old := range node.Status.Conditions {
			if old.Type == conditions[i].Type && old.Status == conditions[i].Status && old.Reason == conditions[i].Reason {
				conditions[i].LastTransitionTime = old.LastTransitionTime
				if !posting || now.Sub(old.LastHeartbeatTime.Time) < report {
					conditions[i].LastHeartbeatTime = old.LastHeartbeatTime
				}
			}
		}
	}
	node.Status.Conditions = conditions
}

// addOns is what the cluster runs that changes its nodes: a CNI (any DaemonSet that installs
// network configuration on its hosts, under /etc/cni/net.d) and an external cloud controller
// manager (any Deployment or DaemonSet running a cloud-controller-manager). Each is the name
// of what was found, or "".
func addOns(ctx context.Context, c inmemoryruntime.Client) (cni, ccm string, err error) {
	daemonSets, err := list[appsv1.DaemonSet](ctx, c, "apps/v1", "DaemonSet")
	if err != nil {
		return "", "", fmt.Errorf("listing DaemonSets: %w", err)
	}
	deployments, err := list[appsv1.Deployment](ctx, c, "apps/v1", "Deployment")
	if err != nil {
		return "", "", fmt.Errorf("listing Deployments: %w", err)
	}
	for _, set := range daemonSets {
		if cni == "" && writesCNIConfig(set.Spec.Template.Spec) {
			cni = set.Namespace + "/" + set.Name
		}
		if ccm == "" && runsCloudControllerManager(set.Spec.Template.Spec) {
			ccm = set.Namespace + "/" + set.Name
		}
	}
	for _, deployment := range deployments {
		if ccm == "" && runsCloudControllerManager(deployment.Spec.Template.Spec) {
			ccm = deployment.Namespace + "/" + deployment.Name
		}
	}
	return cni, ccm, nil
}

func writesCNIConfig(pod corev1.PodSpec) bool {
	for _, volume := range pod.Volumes {
		if volume.HostPath != nil && strings.HasPrefix(strings.TrimSuffix(volume.HostPath.Path, "/"), "/etc/cni/net.d") {
			return true
		}
	}
	return false
}

func runsCloudControllerManager(pod corev1.PodSpec) bool {
	for _, container := range pod.Containers {
		words := append([]string{container.Image}, container.Command...)
		for _, word := range words {
			if strings.Contains(word, "cloud-controller-manager") {
				return true
			}
		}
	}
	return false
}

// syncNode brings a registered node up to date with its machine and the cluster's add-ons: the
// cloud controller manager sets its provider ID and addresses and lifts the uninitialized
// taint, the CNI makes it Ready, a stopped machine's node goes Unknown, and the cloud controller
// manager deletes the node of a machine that no longer exists. It writes only on a change.
func syncNode(ctx context.Context, c inmemoryruntime.Client, m *machineState, cluster *workloadCluster, report time.Duration) error {
	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: m.nodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if m.gone && cluster.ccm != "" {
		if err := c.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting node %s: %w", m.nodeName, err)
		}
		m.nodeDeleted = true
		return nil
	}
	before := node.DeepCopy()
	if m.externalCloud && cluster.ccm != "" {
		node.Spec.ProviderID = m.providerID
		node.Spec.Taints = withoutTaint(node.Spec.Taints, taintUninitialized)
		addresses := []corev1.NodeAddress{}
		for _, ip := range m.privateIPs {
			addresses = append(addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		node.Status.Addresses = append(addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: m.nodeName})
	}
	switch {
	case m.gone || m.powerState != "running":
		setConditions(node, corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", report)
		node.Spec.Taints = withTaint(withoutTaint(node.Spec.Taints, taintNotReady), taintUnreachable)
	case cluster.cni != "":
		setConditions(node, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status", report)
		node.Spec.Taints = withoutTaint(withoutTaint(node.Spec.Taints, taintNotReady), taintUnreachable)
	default:
		setConditions(node, corev1.ConditionFalse, "KubeletNotReady", notReadyMessage, report)
		node.Spec.Taints = withTaint(withoutTaint(node.Spec.Taints, taintUnreachable), taintNotReady)
	}
	if reflect.DeepEqual(before.Spec, node.Spec) && reflect.DeepEqual(before.Status, node.Status) {
		return nil
	}
	if err := c.Update(ctx, node); err != nil {
		return fmt.Errorf("updating node %s: %w", m.nodeName, err)
	}
	return nil
}

func withoutTaint(taints []corev1.Taint, key string) []corev1.Taint {
	return slices.DeleteFunc(slices.Clone(taints), func(taint corev1.Taint) bool { return taint.Key == key })
}

func withTaint(taints []corev1.Taint, key string) []corev1.Taint {
	if slices.ContainsFunc(taints, func(taint corev1.Taint) bool { return taint.Key == key }) {
		return taints
	}
	return append(taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
}
