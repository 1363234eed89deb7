package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/http"
	"reflect"
	"regexp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

const templateHashLabel = "pod-template-hash"

// runDeployments does for the cluster's Deployments what the deployment controller and the
// scheduler would: each keeps its replicas as pods on nodes that take them (not cordoned, every
// taint tolerated, not-ready among them), spread across them; a pod whose node is gone goes too, and a pod of an
// older template is replaced. Pods are Running and Ready once bound. DaemonSets get no pods:
// drain leaves theirs alone, and nothing else here reads them.
func runDeployments(ctx context.Context, c inmemoryruntime.Client) error {
	deployments, err := list[appsv1.Deployment](ctx, c, "apps/v1", "Deployment")
	if err != nil {
		return fmt.Errorf("listing Deployments: %w", err)
	}
	if len(deployments) == 0 {
		return nil
	}
	nodes, err := list[corev1.Node](ctx, c, "v1", "Node")
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	existing := map[string]bool{}
	for _, node := range nodes {
		existing[node.Name] = true
	}
	for i := range deployments {
		if err := runDeployment(ctx, c, &deployments[i], nodes, existing); err != nil {
			return err
		}
	}
	return nil
}

func runDeployment(ctx context.Context, c inmemoryruntime.Client, deployment *appsv1.Deployment, nodes []corev1.Node, existing map[string]bool) error {
	selector, err := metav1.LabelSelectorAsSelector(deployment.Spec.Selector)
	if err != nil || selector.Empty() {
		return nil
	}
	pods, err := list[corev1.Pod](ctx, c, "v1", "Pod", client.InNamespace(deployment.Namespace), client.MatchingLabelsSelector{Selector: selector})
	if err != nil {
		return fmt.Errorf("listing pods of %s: %w", deployment.Name, err)
	}
	hash := templateHash(deployment.Spec.Template)
	current := []corev1.Pod{}
	for _, pod := range pods {
		gone := pod.Spec.NodeName != "" && !existing[pod.Spec.NodeName]
		if gone || pod.Labels[templateHashLabel] != hash {
			if err := c.Delete(ctx, &pod); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting pod %s: %w", pod.Name, err)
			}
			continue
		}
		current = append(current, pod)
	}
	want := 1
	if deployment.Spec.Replicas != nil {
		want = int(*deployment.Spec.Replicas)
	}
	for len(current) > want {
		last := current[len(current)-1]
		if err := c.Delete(ctx, &last); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting pod %s: %w", last.Name, err)
		}
		current = current[:len(current)-1]
	}
	for len(current) < want {
		pod := newPod(deployment, hash)
		if err := c.Create(ctx, pod); err != nil {
			return fmt.Errorf("creating a pod of %s: %w", deployment.Name, err)
		}
		current = append(current, *pod)
	}
	ready := int32(0)
	for i := range current {
		pod := &current[i]
		if pod.Spec.NodeName == "" {
			if node := pickNode(pod, nodes, current); node != "" {
				pod.Spec.NodeName = node
				pod.Status = corev1.PodStatus{
					Phase:      corev1.PodRunning,
					Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				}
				if err := c.Update(ctx, pod); err != nil {
					return fmt.Errorf("binding pod %s: %w", pod.Name, err)
				}
			}
		}
		if pod.Spec.NodeName != "" {
			ready++
		}
	}
	status := appsv1.DeploymentStatus{
		ObservedGeneration: deployment.Generation,
		Replicas:           int32(len(current)),
		UpdatedReplicas:    int32(len(current)),
		ReadyReplicas:      ready,
		AvailableReplicas:  ready,
		Conditions:         deployment.Status.Conditions,
	}
	if status.UnavailableReplicas = int32(len(current)) - ready; status.UnavailableReplicas < 0 {
		status.UnavailableReplicas = 0
	}
	if reflect.DeepEqual(status, deployment.Status) {
		return nil
	}
	deployment.Status = status
	if err := c.Update(ctx, deployment); err != nil {
		return fmt.Errorf("updating the status of %s: %w", deployment.Name, err)
	}
	return nil
}

func templateHash(template corev1.PodTemplateSpec) string {
	encoded, _ := json.Marshal(template)
	digest := fnv.New32a()
	_, _ = digest.Write(encoded)
	return fmt.Sprintf("%08x", digest.Sum32())
}

func newPod(deployment *appsv1.Deployment, hash string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   deployment.Namespace,
			Name:        fmt.Sprintf("%s-%s-%s", deployment.Name, hash, suffix()),
			Labels:      map[string]string{templateHashLabel: hash},
			Annotations: deployment.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: deployment.Name, UID: deployment.UID,
				Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true),
			}},
		},
		Spec:   *deployment.Spec.Template.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	for key, value := range deployment.Spec.Template.Labels {
		pod.Labels[key] = value
	}
	return pod
}

func ptrTo[T any](value T) *T { return &value }

// suffix is five characters as Kubernetes generates names from.
func suffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	out := make([]byte, 5)
	for i := range out {
		out[i] = alphabet[rand.IntN(len(alphabet))]
	}
	return string(out)
}

// pickNode is the schedulable node with the fewest of the pod's siblings, or "" when none takes
// it (the pod stays Pending).
func pickNode(pod *corev1.Pod, nodes []corev1.Node, siblings []corev1.Pod) string {
	best, bestCount := "", 0
	for _, node := range nodes {
		if !schedulable(pod, &node) {
			continue
		}
		count := 0
		for _, sibling := range siblings {
			if sibling.Spec.NodeName == node.Name {
				count++
			}
		}
		if best == "" || count < bestCount {
			best, bestCount = node.Name, count
		}
	}
	return best
}

func schedulable(pod *corev1.Pod, node *corev1.Node) bool {
	// Readiness shows as the not-ready taint, which host-network add-ons tolerate.
	if node.Spec.Unschedulable {
		return false
	}
	if len(pod.Spec.NodeSelector) > 0 && !labels.SelectorFromSet(pod.Spec.NodeSelector).Matches(labels.Set(node.Labels)) {
		return false
	}
	for _, taint := range node.Spec.Taints {
		if taint.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(toleration corev1.Toleration) bool {
			return toleration.ToleratesTaint(logger, &taint, false)
		}) {
			return false
		}
	}
	return true
}

var evictionPath = regexp.MustCompile(`^/api/v1/namespaces/([^/]+)/pods/([^/]+)/eviction$`)

// evict answers an eviction as the API server does: the pod goes unless a PodDisruptionBudget
// that selects it would drop below what it allows (429, as drain expects).
func evict(w http.ResponseWriter, r *http.Request, c inmemoryruntime.Client, namespace, name string) {
	ctx := r.Context()
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		writeStatus(w, apierrors.NewNotFound(corev1.Resource("pods"), name))
		return
	}
	if why := disruptionRefused(ctx, c, pod); why != "" {
		writeStatus(w, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget. "+why, 10))
		return
	}
	if err := c.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess})
}

func disruptionRefused(ctx context.Context, c inmemoryruntime.Client, pod *corev1.Pod) string {
	budgets, err := list[policyv1.PodDisruptionBudget](ctx, c, "policy/v1", "PodDisruptionBudget", client.InNamespace(pod.Namespace))
	if err != nil {
		return ""
	}
	for _, budget := range budgets {
		selector, err := metav1.LabelSelectorAsSelector(budget.Spec.Selector)
		if err != nil || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		pods, err := list[corev1.Pod](ctx, c, "v1", "Pod", client.InNamespace(pod.Namespace), client.MatchingLabelsSelector{Selector: selector})
		if err != nil {
			continue
		}
		healthy := 0
		for _, candidate := range pods {
			if candidate.Spec.NodeName != "" {
				healthy++
			}
		}
		allowed := healthy
		if budget.Spec.MinAvailable != nil {
			minimum, _ := intstr.GetScaledValueFromIntOrPercent(budget.Spec.MinAvailable, len(pods), true)
			allowed = healthy - minimum
		} else if budget.Spec.MaxUnavailable != nil {
			maximum, _ := intstr.GetScaledValueFromIntOrPercent(budget.Spec.MaxUnavailable, len(pods), false)
			allowed = maximum - (len(pods) - healthy)
		}
		if allowed < 1 {
			return fmt.Sprintf("The disruption budget %s allows no disruption now (%d of %d pods healthy).", budget.Name, healthy, len(pods))
		}
	}
	return ""
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.Status()
	status.Kind, status.APIVersion = "Status", "v1"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_ = json.NewEncoder(w).Encode(status)
}
