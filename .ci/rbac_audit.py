#!/usr/bin/env python3
"""Holds the RBAC of capz-rs's ServiceAccounts to what they use.

Reads the components clusterctl installs (rendered `deploy/all`) and the API server audit logs of
end-to-end runs (`CAPZ_AUDIT_DIR`), and for each ServiceAccount of capz-system compares what its
bindings grant (API group, resource, verb) with what it was seen doing. Prints the table of both,
and exits non-zero when a role grants something none of the ServiceAccounts bound to it used
(but for the few grants below, which the end-to-end runs cannot show), or when the authorizer
refused one of their requests.
"""

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import yaml

NAMESPACE = "capz-system"
PREFIX = f"system:serviceaccount:{NAMESPACE}:"
# Grants the runs cannot show being used, each with why it is needed: (role, group, resource, verb).
CONFLICT = "read again after a finalizer add that lost a race with another controller (409), which a run may not hit"
CACHED = "read only for an owner its watch's store does not hold yet (a pass before the watch has listed it), which a run may not hit"
UNSEEN = {
    ("capz-compute", "cluster.x-k8s.io", "clusters", "get"): CACHED,
    ("capz-compute", "cluster.x-k8s.io", "machines", "get"): CACHED,
    ("capz-compute", "infrastructure.cluster.x-k8s.io", "azureclusters", "get"): CACHED,
    ("capz-identity-reader", "", "namespaces", "get"):
        "an AzureClusterIdentity's allowedNamespaces.selector is matched against the cluster's namespace's labels",
    ("capz-compute", "infrastructure.cluster.x-k8s.io", "azuremachines", "get"): CONFLICT,
    ("capz-loadbalancer", "infrastructure.cluster.x-k8s.io", "azuremachines", "get"): CONFLICT,
    ("capz-loadbalancer", "infrastructure.cluster.x-k8s.io", "azureclusters", "get"): CONFLICT,
    ("capz-network", "infrastructure.cluster.x-k8s.io", "azureclusters", "get"): CONFLICT,
    ("capz-privatedns", "infrastructure.cluster.x-k8s.io", "azureclusters", "get"): CONFLICT,
    ("capz-bastion", "infrastructure.cluster.x-k8s.io", "azureclusters", "get"): CONFLICT,
    ("capz-identity", "infrastructure.cluster.x-k8s.io", "azureclusteridentities", "get"): CONFLICT,
    ("capz-vmss", "infrastructure.cluster.x-k8s.io", "azuremachinepools", "get"): CONFLICT,
    ("capz-vmss", "cluster.x-k8s.io", "machinepools", "patch"):
        "only for a MachinePool an autoscaler outside Cluster API scales (cluster.x-k8s.io/replicas-managed-by)",
    ("capz-aks", "infrastructure.cluster.x-k8s.io", "azuremanagedcontrolplanes", "get"): CONFLICT,
    ("capz-aks", "infrastructure.cluster.x-k8s.io", "azuremanagedmachinepools", "get"): CONFLICT,
    ("capz-aks", "infrastructure.cluster.x-k8s.io", "azuremanagedclusters", "get"): CONFLICT,
    ("capz-webhooks", "infrastructure.cluster.x-k8s.io", "azureclusters", "get"):
        "read only to default the role of a machine or pool with a system-assigned identity in a cluster "
        "whose AzureCluster exists, which the suite admits only without one",
    ("capz-vmss", "infrastructure.cluster.x-k8s.io", "azuremachinepoolmachines", "get"):
        "read when its create lost a race with the pass that made it (409), which a run may not hit",
}


def grants(components):
    """(account, group, resource, verb) -> the roles that grant it."""
    documents = [doc for doc in yaml.safe_load_all(components.read_text()) if doc]
    roles = {}
    for doc in documents:
        if doc["kind"] in ("ClusterRole", "Role"):
            key = (doc["kind"], doc["metadata"].get("namespace", ""), doc["metadata"]["name"])
            roles[key] = doc.get("rules") or []
    granted = defaultdict(set)
    for doc in documents:
        if doc["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        ref = doc["roleRef"]
        namespace = doc["metadata"].get("namespace", "") if ref["kind"] == "Role" else ""
        rules = roles.get((ref["kind"], namespace, ref["name"]))
        if rules is None:
            sys.exit(f"rbac-audit: {doc['kind']} {doc['metadata']['name']} names a missing {ref['kind']} {ref['name']}")
        for subject in doc.get("subjects") or []:
            if subject["kind"] != "ServiceAccount" or subject.get("namespace") != NAMESPACE:
                continue
            for rule in rules:
                for group in rule.get("apiGroups", []):
                    for resource in rule.get("resources", []):
                        for verb in rule.get("verbs", []):
                            granted[(subject["name"], group, resource, verb)].add(f"{ref['kind']} {ref['name']}")
    return granted


def requests(audit_dir):
    """(account, group, resource, verb) -> namespaces seen, and the requests the authorizer
    refused (a 403 for another reason, such as a namespace being deleted, is not one)."""
    used = defaultdict(set)
    forbidden = []
    files = sorted(audit_dir.glob("*.log*"))
    if not files:
        sys.exit(f"rbac-audit: no audit logs in {audit_dir}; run the end-to-end tests with CAPZ_AUDIT_DIR set")
    for file in files:
        for line in file.read_text().splitlines():
            event = json.loads(line)
            user = event.get("user", {}).get("username", "")
            if not user.startswith(PREFIX):
                continue
            account = user[len(PREFIX):]
            ref = event.get("objectRef")
            if ref is None:
                continue  # discovery and /version: every authenticated user may
            resource = ref.get("resource", "")
            if ref.get("subresource"):
                resource += "/" + ref["subresource"]
            key = (account, ref.get("apiGroup", ""), resource, event["verb"])
            if event.get("annotations", {}).get("authorization.k8s.io/decision") == "forbid":
                forbidden.append((key, ref.get("namespace", ""), ref.get("name", "")))
                continue
            used[key].add(ref.get("namespace") or "(cluster)")
            # A server-side apply that created the object (201) was authorised as a create too.
            if event["verb"] == "patch" and event.get("responseStatus", {}).get("code") == 201:
                used[(*key[:3], "create")].add(ref.get("namespace") or "(cluster)")
    return used, forbidden


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("components", type=Path, help="the rendered deploy/all")
    parser.add_argument("audit_dir", type=Path, help="a directory of audit logs")
    args = parser.parse_args()
    granted = grants(args.components)
    used, forbidden = requests(args.audit_dir)
    # A role's grant is used when any ServiceAccount it is bound to used it.
    role_used = defaultdict(bool)
    for key, roles in granted.items():
        for role in roles:
            role_used[(role, *key[1:])] |= key in used
    unused = sorted(
        (role, *key[1:]) for key, roles in granted.items() for role in roles
        if not role_used[(role, *key[1:])] and (role.split(" ", 1)[1], *key[1:]) not in UNSEEN
    )
    unused = sorted(set(unused))
    rows = defaultdict(lambda: ([], []))
    for account, group, resource, verb in granted:
        rows[(account, group, resource)][0].append(verb)
    for account, group, resource, verb in used:
        rows[(account, group, resource)][1].append(verb)
    print("| ServiceAccount | Resource | Granted | Used |")
    print("|---|---|---|---|")
    for (account, group, resource), (grant, use) in sorted(rows.items()):
        name = f"{resource}.{group}" if group else resource
        print(f"| {account} | {name} | {', '.join(sorted(grant)) or '-'} | {', '.join(sorted(use)) or '-'} |")
    for (role, group, resource, verb), why in sorted(UNSEEN.items()):
        if not any(role_used[(kind + " " + role, group, resource, verb)] for kind in ("ClusterRole", "Role")):
            print(f"rbac-audit: {role} grants {verb} {resource}{'.' + group if group else ''} unseen: {why}")
    failed = False
    for (role, group, resource, verb) in unused:
        failed = True
        print(f"rbac-audit: {role} grants {verb} {resource}{'.' + group if group else ''}, which no ServiceAccount bound to it used")
    # The authorizer learns of new bindings from a watch: a request made the moment a binding was
    # created may be refused and then allowed on its retry. Only a refusal never followed by an
    # allowed request of its kind in its namespace is a missing grant.
    late = [entry for entry in forbidden if (entry[1] or "(cluster)") in used.get(entry[0], set())]
    if late:
        print(f"rbac-audit: {len(late)} request(s) refused before a new binding reached the authorizer, allowed on retry")
    for key, namespace, name in forbidden:
        if (key, namespace, name) in late:
            continue
        failed = True
        account, group, resource, verb = key
        print(f"rbac-audit: {account} was refused {verb} {resource}{'.' + group if group else ''} {namespace}/{name}")
    if failed:
        sys.exit(1)
    print(f"rbac-audit: {len(granted)} grants to {len({key[0] for key in granted})} ServiceAccounts, each role's used; nothing refused")


if __name__ == "__main__":
    main()
