package main

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
)

// wantsTable tells whether a client asks for the server-side table kubectl prints.
func wantsTable(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "as=Table") &&
		r.URL.Query().Get("watch") == ""
}

// nodeTable answers `kubectl get nodes` with the columns the API server gives it (NAME, STATUS,
// ROLES, AGE, VERSION, and with -o wide the addresses and the node's system); the in-memory
// handler only answers lists, which kubectl would print without a status.
func nodeTable(w http.ResponseWriter, r *http.Request, c inmemoryruntime.Client, name string) {
	selector, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	nodes, err := list[corev1.Node](r.Context(), c, "v1", "Node", client.MatchingLabelsSelector{Selector: selector})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	column := func(name, kind string, priority int32) metav1.TableColumnDefinition {
		return metav1.TableColumnDefinition{Name: name, Type: kind, Priority: priority}
	}
	table := metav1.Table{
		TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ColumnDefinitions: []metav1.TableColumnDefinition{
			column("Name", "string", 0), column("Status", "string", 0), column("Roles", "string", 0),
			column("Age", "string", 0), column("Version", "string", 0),
			column("Internal-IP", "string", 1), column("External-IP", "string", 1),
			column("OS-Image", "string", 1), column("Kernel-Version", "string", 1),
			column("Container-Runtime", "string", 1),
		},
	}
	for i := range nodes {
		node := &nodes[i]
		if name != "" && node.Name != name {
			continue
		}
		metadata, _ := json.Marshal(metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"},
			ObjectMeta: node.ObjectMeta,
		})
		info := node.Status.NodeInfo
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells: []any{
				node.Name, nodeStatus(node), nodeRoles(node),
				duration.HumanDuration(time.Since(node.CreationTimestamp.Time)), info.KubeletVersion,
				nodeAddress(node, corev1.NodeInternalIP), nodeAddress(node, corev1.NodeExternalIP),
				info.OSImage, info.KernelVersion, info.ContainerRuntimeVersion,
			},
			Object: runtime.RawExtension{Raw: metadata},
		})
	}
	if name != "" && len(table.Rows) == 0 {
		http.Error(w, `nodes "`+name+`" not found`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(table)
}

func nodeStatus(node *corev1.Node) string {
	status := "Unknown"
	for _, condition := range node.Status.Conditions {
		if condition.Type == corev1.NodeReady {
			switch condition.Status {
			case corev1.ConditionTrue:
				status = "Ready"
			case corev1.ConditionFalse:
				status = "NotReady"
			}
		}
	}
	if node.Spec.Unschedulable {
		status += ",SchedulingDisabled"
	}
	return status
}

func nodeRoles(node *corev1.Node) string {
	roles := []string{}
	for label := range node.Labels {
		if role, ok := strings.CutPrefix(label, "node-role.kubernetes.io/"); ok && role != "" {
			roles = append(roles, role)
		}
	}
	if len(roles) == 0 {
		return "<none>"
	}
	sort.Strings(roles)
	return strings.Join(roles, ",")
}

func nodeAddress(node *corev1.Node, kind corev1.NodeAddressType) string {
	for _, address := range node.Status.Addresses {
		if address.Type == kind {
			return address.Address
		}
	}
	return "<none>"
}
