package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

func store(t *testing.T) inmemoryruntime.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	manager := inmemoryruntime.NewManager(scheme)
	manager.AddResourceGroup("test")
	return manager.GetResourceGroup("test").GetClient()
}

func TestImageVersionReadsReferenceImages(t *testing.T) {
	for image, want := range map[string]string{
		`{"communityGalleryImageId": "/CommunityGalleries/ClusterAPI-x/Images/capi-ubun2-2404/Versions/1.33.5"}`: "v1.33.5",
		`{"publisher": "cncf-upstream", "offer": "capi", "version": "133.5.20250101"}`:                           "v1.33.5",
		`{"publisher": "Canonical", "version": "latest"}`:                                                        "",
		`null`: "",
	} {
		if got := imageVersion(json.RawMessage(image)); got != want {
			t.Errorf("imageVersion(%s) = %q, want %q", image, got, want)
		}
	}
}

func TestKubeletArgsTakeBothShapes(t *testing.T) {
	list := nodeRegistration{KubeletExtraArgs: json.RawMessage(`[{"name": "cloud-provider", "value": "external"}]`)}
	byName := nodeRegistration{KubeletExtraArgs: json.RawMessage(`{"cloud-provider": "external"}`)}
	for _, registration := range []nodeRegistration{list, byName} {
		if got := registration.kubeletArg("cloud-provider"); got != "external" {
			t.Errorf("cloud-provider = %q", got)
		}
	}
}

func TestTemplateHashesNameValidPods(t *testing.T) {
	for replicas := range 50 {
		template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"n": strings.Repeat("x", replicas)}}}
		if hash := templateHash(template); len(hash) != 8 {
			t.Fatalf("hash %q is not eight characters", hash)
		}
	}
}

func TestAddOnsAreRecognisedByWhatTheyDo(t *testing.T) {
	ctx := context.Background()
	c := store(t)
	if cni, ccm, err := addOns(ctx, c); err != nil || cni != "" || ccm != "" {
		t.Fatalf("an empty cluster has add-ons: %q %q %v", cni, ccm, err)
	}
	network := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "calico-node"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "cni", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/cni/net.d/"}}}},
		}}},
	}
	cloud := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "ccm"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "ccm", Image: "mcr.microsoft.com/oss/kubernetes/azure-cloud-controller-manager:v1.33.3"}},
		}}},
	}
	for _, object := range []client.Object{network, cloud} {
		if err := c.Create(ctx, object); err != nil {
			t.Fatal(err)
		}
	}
	cni, ccm, err := addOns(ctx, c)
	if err != nil || cni != "kube-system/calico-node" || ccm != "kube-system/ccm" {
		t.Fatalf("add-ons: %q %q %v", cni, ccm, err)
	}
}

func TestDeploymentsLandOnNodesThatTakeThem(t *testing.T) {
	ctx := context.Background()
	c := store(t)
	tainted := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp"}, Spec: corev1.NodeSpec{
		Taints: []corev1.Taint{{Key: taintControlPlane, Effect: corev1.TaintEffectNoSchedule}},
	}}
	cordoned := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cordoned"}, Spec: corev1.NodeSpec{Unschedulable: true}}
	worker := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}
	for _, node := range []corev1.Node{tainted, cordoned, worker} {
		if err := c.Create(ctx, &node); err != nil {
			t.Fatal(err)
		}
	}
	replicas := int32(2)
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "coredns"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"k8s-app": "kube-dns"}}},
		},
	}
	if err := c.Create(ctx, deployment); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := runDeployments(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace("kube-system")); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 2 {
		t.Fatalf("%d pods, want 2", len(pods.Items))
	}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName != "worker" {
			t.Errorf("pod %s is on %q: only the worker takes it", pod.Name, pod.Spec.NodeName)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(deployment), deployment); err != nil {
		t.Fatal(err)
	}
	if deployment.Status.ReadyReplicas != 2 {
		t.Errorf("ready replicas %d, want 2", deployment.Status.ReadyReplicas)
	}
}

func TestTokensAreCheckedAsKubeadmDoes(t *testing.T) {
	ctx := context.Background()
	c := store(t)
	if why := tokenAccepted(ctx, c, "abcdef.0123456789abcdef"); !strings.Contains(why, "does not know") {
		t.Fatalf("an unknown token: %q", why)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "bootstrap-token-abcdef"},
		Data: map[string][]byte{
			"token-secret":                   []byte("0123456789abcdef"),
			"usage-bootstrap-authentication": []byte("true"),
			"expiration":                     []byte("2000-01-01T00:00:00Z"),
		},
	}
	if err := c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if why := tokenAccepted(ctx, c, "abcdef.0123456789abcdef"); !strings.Contains(why, "expired") {
		t.Fatalf("an expired token: %q", why)
	}
	secret.Data["expiration"] = []byte("2999-01-01T00:00:00Z")
	if err := c.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if why := tokenAccepted(ctx, c, "abcdef.0123456789abcdef"); why != "" {
		t.Fatalf("a valid token is refused: %q", why)
	}
	if why := tokenAccepted(ctx, c, "abcdef.ffffffffffffffff"); !strings.Contains(why, "another secret") {
		t.Fatalf("a wrong secret: %q", why)
	}
}

func TestPodsOfDeletedNodesGoAndAnotherMemberLeads(t *testing.T) {
	ctx := context.Background()
	c := store(t)
	for _, name := range []string{"cp-a", "cp-b"} {
		if err := c.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatal(err)
		}
		if err := staticPods(ctx, c, name, "v1.33.1"); err != nil {
			t.Fatal(err)
		}
	}
	before, err := etcdMembers(ctx, c)
	if err != nil || before.leader != "etcd-cp-a" || len(before.pods) != 2 {
		t.Fatalf("members %+v, %v", before, err)
	}
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cp-a"}}); err != nil {
		t.Fatal(err)
	}
	removed, err := collectPods(ctx, c)
	if err != nil || len(removed) != 1 || removed[0] != "etcd-cp-a" {
		t.Fatalf("removed %v, %v", removed, err)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods); err != nil {
		t.Fatal(err)
	}
	for _, pod := range pods.Items {
		if pod.Spec.NodeName != "cp-b" {
			t.Errorf("pod %s of a deleted node is left", pod.Name)
		}
	}
	if len(pods.Items) != len(controlPlaneComponents) {
		t.Errorf("%d pods, want %d", len(pods.Items), len(controlPlaneComponents))
	}
	after, err := etcdMembers(ctx, c)
	if err != nil || after.leader != "etcd-cp-b" {
		t.Fatalf("the remaining member does not lead: %+v, %v", after, err)
	}
}

// Objects written through the API server are kept unstructured; the simulator reads them all the
// same.
func TestObjectsWrittenThroughTheAPIAreRead(t *testing.T) {
	ctx := context.Background()
	c := store(t)
	daemonSet := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "DaemonSet",
		"metadata": map[string]any{"namespace": "kube-flannel", "name": "kube-flannel-ds"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"volumes": []any{map[string]any{"name": "cni", "hostPath": map[string]any{"path": "/etc/cni/net.d"}}},
		}}},
	}}
	node := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "worker"},
	}}
	for _, object := range []client.Object{daemonSet, node} {
		if err := c.Create(ctx, object); err != nil {
			t.Fatal(err)
		}
	}
	if cni, _, err := addOns(ctx, c); err != nil || cni != "kube-flannel/kube-flannel-ds" {
		t.Fatalf("cni %q, %v", cni, err)
	}
	if _, err := collectPods(ctx, c); err != nil {
		t.Fatal(err)
	}
	nodes, err := list[corev1.Node](ctx, c, "v1", "Node")
	if err != nil || len(nodes) != 1 || nodes[0].Name != "worker" {
		t.Fatalf("nodes %v, %v", nodes, err)
	}
}

func TestProviderIDsHaveTheirResourceGroupInLowerCase(t *testing.T) {
	id := "/subscriptions/s/resourceGroups/MC_Group_c1_westeurope/providers/Microsoft.Compute/virtualMachineScaleSets/aks-pool0-1-vmss/virtualMachines/0"
	want := "azure:///subscriptions/s/resourceGroups/mc_group_c1_westeurope/providers/Microsoft.Compute/virtualMachineScaleSets/aks-pool0-1-vmss/virtualMachines/0"
	if got := providerID(id); got != want {
		t.Fatalf("providerID(%q) = %q, want %q", id, got, want)
	}
}

// A running kubelet posts a steady node's status once its last report is as old as the report
// frequency, moving the heartbeat and not the transition; a stopped one posts nothing.
func TestKubeletsReportSteadyNodesAtTheirFrequency(t *testing.T) {
	const report = 5 * time.Minute
	node := &corev1.Node{}
	setConditions(node, corev1.ConditionTrue, "KubeletReady", "ready", report)
	ready := func() corev1.NodeCondition { return node.Status.Conditions[3] }
	transition := ready().LastTransitionTime

	before := node.DeepCopy()
	setConditions(node, corev1.ConditionTrue, "KubeletReady", "ready", report)
	if !reflect.DeepEqual(before.Status, node.Status) {
		t.Fatalf("a fresh report was posted again: %v", node.Status.Conditions)
	}

	aged := metav1.NewTime(time.Now().Add(-report))
	for i := range node.Status.Conditions {
		node.Status.Conditions[i].LastHeartbeatTime = aged
	}
	setConditions(node, corev1.ConditionTrue, "KubeletReady", "ready", report)
	if !ready().LastHeartbeatTime.After(aged.Time) || !ready().LastTransitionTime.Time.Equal(transition.Time) {
		t.Fatalf("an old report was not renewed alone: %+v", ready())
	}

	setConditions(node, corev1.ConditionUnknown, "NodeStatusUnknown", "stopped", report)
	for i := range node.Status.Conditions {
		node.Status.Conditions[i].LastHeartbeatTime = aged
	}
	setConditions(node, corev1.ConditionUnknown, "NodeStatusUnknown", "stopped", report)
	if !ready().LastHeartbeatTime.Time.Equal(aged.Time) {
		t.Fatalf("a stopped kubelet posted its status: %+v", ready())
	}

	setConditions(node, corev1.ConditionTrue, "KubeletReady", "ready", 0)
	for i := range node.Status.Conditions {
		node.Status.Conditions[i].LastHeartbeatTime = aged
	}
	setConditions(node, corev1.ConditionTrue, "KubeletReady", "ready", 0)
	if !ready().LastHeartbeatTime.Time.Equal(aged.Time) {
		t.Fatalf("a report frequency of 0 posted a steady node: %+v", ready())
	}
}
