package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// What AKS runs in every cluster, which the simulator stands for: its CNI and its cloud
// controller manager.
const (
	aksNetwork       = "azure-cni (AKS)"
	aksCloudProvider = "cloud-controller-manager (AKS)"
)

// runManaged keeps an AKS cluster's API server up at its endpoint while the emulator runs the
// cluster, and its pools' instances registered as Nodes: Ready with their provider IDs at once,
// since AKS brings its network and cloud provider along. seen collects the instances' IDs.
func (s *simulator) runManaged(ctx context.Context, managed *managedCluster, seen map[string]bool) {
	endpoint := strings.ToLower(managed.Endpoint)
	cluster := s.clusters[endpoint]
	if cluster == nil {
		created, err := s.createManaged(ctx, managed)
		if err != nil {
			logger.Error(err, "a managed cluster does not start", "cluster", managed.ID)
			return
		}
		cluster = created
		s.clusters[endpoint] = cluster
	}
	cluster.present = true
	if cluster.entraOnly != managed.LocalAccountsDisabled || !strings.EqualFold(cluster.tenant, managed.TenantID) {
		logger.Info("how callers sign in to a managed cluster", "cluster", managed.ID, "entraOnly", managed.LocalAccountsDisabled, "tenant", managed.TenantID)
	}
	cluster.entraOnly, cluster.tenant = managed.LocalAccountsDisabled, managed.TenantID
	if err := s.serve(ctx, cluster); err != nil {
		logger.Error(err, "serving a managed cluster", "cluster", managed.ID)
		return
	}
	for i := range managed.Nodes {
		node := &managed.Nodes[i]
		key := strings.ToLower(node.ID)
		seen[key] = true
		state, known := s.machines[key]
		if !known {
			state = &machineState{
				id:            node.ID,
				nodeName:      node.ComputerName,
				role:          "aks:" + node.Pool,
				externalCloud: true,
				providerID:    providerID(node.ID),
				version:       node.KubernetesVersion,
			}
			s.machines[key] = state
		}
		state.powerState, state.privateIPs = node.PowerState, node.PrivateIPs
		if state.joined && state.version != node.KubernetesVersion {
			// AKS upgrades a pool by reimaging its nodes: each kubelet comes back at the new version.
			if err := reportKubeletVersion(ctx, cluster.client, state.nodeName, node.KubernetesVersion); err != nil {
				state.waiting = err.Error()
				continue
			}
			state.version, state.waiting = node.KubernetesVersion, ""
		}
		if state.joined || state.powerState != "running" {
			continue
		}
		labels := map[string]string{
			"agentpool":                      node.Pool,
			"kubernetes.azure.com/agentpool": node.Pool,
			"kubernetes.azure.com/mode":      strings.ToLower(node.Mode),
			"kubernetes.azure.com/cluster":   managed.Name,
		}
		if err := register(ctx, cluster.client, state, registration{taints: &[]corev1.Taint{}, labels: labels}); err != nil {
			state.waiting = err.Error()
			continue
		}
		state.joined, state.waiting, state.cluster = true, "", cluster
	}
}

func (s *simulator) createManaged(ctx context.Context, managed *managedCluster) (*workloadCluster, error) {
	ca, err := loadAuthority(managed.Keys["ca.crt"], managed.Keys["ca.key"])
	if err != nil {
		return nil, fmt.Errorf("the cluster's CA: %w", err)
	}
	s.serial++
	group := fmt.Sprintf("%s-%d", managed.Name, s.serial)
	s.manager.AddResourceGroup(group)
	cluster, err := newWorkloadCluster(managed.Endpoint, managed.Name, managed.KubernetesVersion, ca, nil, group,
		s.manager.GetResourceGroup(group).GetClient())
	if err != nil {
		s.manager.DeleteResourceGroup(group)
		return nil, err
	}
	cluster.managed, cluster.cni, cluster.ccm = true, aksNetwork, aksCloudProvider
	if err := create(ctx, cluster.client, baseObjects(managed.KubernetesVersion)); err != nil {
		s.manager.DeleteResourceGroup(group)
		return nil, err
	}
	logger.Info("a managed cluster runs", "cluster", managed.ID, "endpoint", managed.Endpoint)
	return cluster, nil
}
