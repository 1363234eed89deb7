"""AKS through azure-mgmt-containerservice: a cluster with its node resource group, agent pools
that scale and upgrade, credentials, upgrade profiles, maintenance configurations, and the
errors AKS gives."""

from azure.mgmt.containerservice import models as aks_models

from support import LOCATION, SIZE, arm_error, assert_gone, names


def cluster(version: str) -> aks_models.ManagedCluster:
    return aks_models.ManagedCluster(
        location=LOCATION,
        identity=aks_models.ManagedClusterIdentity(type="SystemAssigned"),
        kubernetes_version=version,
        dns_prefix="sdk",
        agent_pool_profiles=[
            aks_models.ManagedClusterAgentPoolProfile(name="system", count=1, vm_size=SIZE, mode="System")
        ],
    )


def test_cluster_pools_upgrades_and_credentials(aks, compute, group):
    clusters = aks.managed_clusters
    versions = clusters.list_kubernetes_versions(LOCATION)
    assert any(release.version == "1.33" and release.is_default for release in versions.values_property)

    created = clusters.begin_create_or_update(group, "sdk-aks", cluster("1.32")).result()
    assert created.provisioning_state == "Succeeded"
    assert created.current_kubernetes_version == "1.32.9"
    assert created.node_resource_group == f"MC_{group}_sdk-aks_{LOCATION}"
    assert created.identity_profile["kubeletidentity"].client_id
    sets = list(compute.virtual_machine_scale_sets.list(created.node_resource_group))
    assert len(sets) == 1 and sets[0].tags["aks-managed-poolName"] == "system"

    pools = aks.agent_pools
    pool = aks_models.AgentPool(count=2, vm_size=SIZE, mode="User", node_taints=["dedicated=batch:NoSchedule"])
    created_pool = pools.begin_create_or_update(group, "sdk-aks", "batch", pool).result()
    assert created_pool.current_orchestrator_version == "1.32.9"
    assert names(pools.list(group, "sdk-aks")) == {"system", "batch"}
    pool.count = 3
    assert pools.begin_create_or_update(group, "sdk-aks", "batch", pool).result().count == 3
    batch_set = next(
        s for s in compute.virtual_machine_scale_sets.list(created.node_resource_group) if s.tags["aks-managed-poolName"] == "batch"
    )
    instances = list(compute.virtual_machine_scale_set_vms.list(created.node_resource_group, batch_set.name))
    assert len(instances) == 3

    # The control plane first, one minor at a time; then the pool.
    with arm_error("OperationNotAllowed", 400):
        clusters.begin_create_or_update(group, "sdk-aks", cluster("1.34")).result()
    with arm_error("NodePoolMcVersionIncompatible", 400):
        pool.orchestrator_version = "1.33"
        pools.begin_create_or_update(group, "sdk-aks", "batch", pool).result()
    upgraded = clusters.begin_create_or_update(group, "sdk-aks", cluster("1.33")).result()
    assert upgraded.current_kubernetes_version == "1.33.6"
    profile = clusters.get_upgrade_profile(group, "sdk-aks")
    assert [u.kubernetes_version for u in profile.control_plane_profile.upgrades] == ["1.34.1", "1.34.2"]
    assert pools.begin_create_or_update(group, "sdk-aks", "batch", pool).result().current_orchestrator_version == "1.33.6"

    for listed, user in [
        (clusters.list_cluster_admin_credentials(group, "sdk-aks"), "clusterAdmin"),
        (clusters.list_cluster_user_credentials(group, "sdk-aks"), "clusterUser"),
    ]:
        assert listed.kubeconfigs[0].name == user
        # The SDK hands over the kubeconfig decoded from its base64.
        kubeconfig = listed.kubeconfigs[0].value.decode()
        assert f"server: https://{upgraded.fqdn}:443" in kubeconfig

    window = aks_models.MaintenanceConfiguration(
        maintenance_window=aks_models.MaintenanceWindow(
            schedule=aks_models.Schedule(weekly=aks_models.WeeklySchedule(interval_weeks=1, day_of_week="Saturday")),
            duration_hours=8,
            start_time="00:00",
        )
    )
    configurations = aks.maintenance_configurations
    saved = configurations.create_or_update(group, "sdk-aks", "aksManagedAutoUpgradeSchedule", window)
    assert saved.maintenance_window.utc_offset == "+00:00"
    configurations.delete(group, "sdk-aks", "aksManagedAutoUpgradeSchedule")

    with arm_error("OperationNotAllowed", 400):
        pools.begin_delete(group, "sdk-aks", "system").result()
    pools.begin_delete(group, "sdk-aks", "batch").result()
    assert names(pools.list(group, "sdk-aks")) == {"system"}
    clusters.begin_delete(group, "sdk-aks").result()
    assert_gone(clusters.get, group, "sdk-aks")
