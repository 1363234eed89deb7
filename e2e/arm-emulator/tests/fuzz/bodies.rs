//! Request bodies: a valid one per type, then broken ones: wrong types, missing or extra
//! properties, references to what does not exist, malformed or truncated JSON.

use serde_json::{Map, Value, json};

use super::{
    BROKEN_IDS, CONTRIBUTOR, KINDS, LOCATIONS, OBJECT_ID, OWNER, PREFIXES, RESOURCE_GROUPS, SUB,
    SUBNET_PREFIXES, Session,
};

/// Bodies: valid ones per type, then broken.
impl Session {
    pub(super) fn location(&mut self) -> &'static str {
        self.choose(LOCATIONS)
    }

    /// One of `options`: any while fuzzing, the first (a valid one) while building.
    pub(super) fn choose<T: Copy>(&mut self, options: &[T]) -> T {
        if self.strict {
            options[0]
        } else {
            *self.rng.pick(options)
        }
    }

    pub(super) fn group_body(&mut self) -> Value {
        let mut body = json!({"location": self.location()});
        if self.rng.percent(50) {
            body["tags"] = json!({"owner": "fuzz"});
        }
        if self.rng.percent(10) {
            body["managedBy"] = json!(self.reference("Microsoft.Compute/virtualMachines"));
        }
        body
    }

    pub(super) fn subnet_properties(&mut self) -> Value {
        let mut properties = json!({"addressPrefix": self.choose(SUBNET_PREFIXES)});
        if self.rng.percent(20) {
            properties["addressPrefixes"] = json!([self.choose(SUBNET_PREFIXES)]);
        }
        for (property, kind) in [
            ("networkSecurityGroup", "Microsoft.Network/networkSecurityGroups"),
            ("routeTable", "Microsoft.Network/routeTables"),
            ("natGateway", "Microsoft.Network/natGateways"),
        ] {
            if self.rng.percent(25) {
                properties[property] = json!({"id": self.reference(kind)});
            }
        }
        if self.rng.percent(10) {
            properties["delegations"] = json!([{"name": "d", "properties": {"serviceName": "Microsoft.ContainerInstance/containerGroups"}}]);
        }
        if self.rng.percent(10) {
            let service = self.choose(&["Microsoft.Storage", "Microsoft.Sql", "Microsoft.KeyVault"]);
            properties["serviceEndpoints"] = if self.rng.percent(50) {
                json!([{"service": service}])
            } else {
                json!([{"service": service, "locations": ["*"]}])
            };
        }
        properties
    }

    pub(super) fn security_rule(&mut self) -> Value {
        json!({
            "protocol": self.choose(&["Tcp", "udp", "*", "Icmp"]),
            "access": self.choose(&["Allow", "Deny"]),
            "direction": self.choose(&["Inbound", "Outbound"]),
            "priority": self.choose(&[100, 200, 4096, 100]),
            "sourcePortRange": "*",
            "destinationPortRange": self.choose(&["22", "6443", "*"]),
            "sourceAddressPrefix": "*",
            "destinationAddressPrefix": "*",
        })
    }

    pub(super) fn route(&mut self) -> Value {
        if self.rng.percent(50) {
            json!({"addressPrefix": "10.1.0.0/16", "nextHopType": "VnetLocal"})
        } else {
            json!({"addressPrefix": "0.0.0.0/0", "nextHopType": "VirtualAppliance", "nextHopIpAddress": "10.0.1.4"})
        }
    }

    /// The id of a load balancer part, of a balancer seen before or of the pool names.
    pub(super) fn part(&mut self, property: &str, names: &[&str]) -> Value {
        let balancer = self.reference("Microsoft.Network/loadBalancers");
        json!({"id": format!("{balancer}/{property}/{}", self.rng.pick(names))})
    }

    pub(super) fn balancer_part(&mut self, property: &str) -> Value {
        match property {
            "frontendIPConfigurations" => {
                if self.rng.percent(60) {
                    json!({"publicIPAddress": {"id": self.reference("Microsoft.Network/publicIPAddresses")}})
                } else {
                    json!({"subnet": {"id": self.reference("Microsoft.Network/virtualNetworks/subnets")}, "privateIPAllocationMethod": "Dynamic"})
                }
            }
            "backendAddressPools" => json!({}),
            "loadBalancingRules" => json!({
                "frontendIPConfiguration": self.part("frontendIPConfigurations", &["fe", "sub"]),
                "backendAddressPool": self.part("backendAddressPools", &["pool", "sub"]),
                "probe": self.part("probes", &["probe", "sub"]),
                "protocol": "Tcp", "frontendPort": 6443, "backendPort": 6443,
            }),
            "probes" => json!({"protocol": "Https", "port": 6443, "requestPath": "/readyz"}),
            "inboundNatRules" => json!({
                "frontendIPConfiguration": self.part("frontendIPConfigurations", &["fe", "sub"]),
                "frontendPort": 2200, "backendPort": 22, "protocol": "Tcp",
            }),
            "outboundRules" => json!({
                "frontendIPConfigurations": [self.part("frontendIPConfigurations", &["fe", "sub"])],
                "backendAddressPool": self.part("backendAddressPools", &["pool", "sub"]),
                "protocol": "All",
            }),
            _ => json!({
                "frontendIPConfiguration": self.part("frontendIPConfigurations", &["fe", "sub"]),
                "protocol": "Tcp", "frontendPortRangeStart": 50000, "frontendPortRangeEnd": 50100, "backendPort": 22,
            }),
        }
    }

    pub(super) fn balancer_body(&mut self, location: &str, balancer: &str) -> Value {
        let mut properties = Map::new();
        properties.insert(
            "frontendIPConfigurations".into(),
            json!([{"name": "fe", "properties": self.balancer_part("frontendIPConfigurations")}]),
        );
        properties.insert("backendAddressPools".into(), json!([{"name": "pool"}]));
        if self.rng.percent(60) {
            properties.insert(
                "probes".into(),
                json!([{"name": "probe", "properties": self.balancer_part("probes")}]),
            );
            // Parts of the same balancer, named as a client names them before it exists.
            properties.insert(
                "loadBalancingRules".into(),
                json!([{"name": "rule", "properties": {
                    "frontendIPConfiguration": {"id": format!("{balancer}/frontendIPConfigurations/fe")},
                    "backendAddressPool": {"id": format!("{balancer}/backendAddressPools/pool")},
                    "probe": {"id": format!("{balancer}/probes/probe")},
                    "protocol": "Tcp", "frontendPort": 6443, "backendPort": 6443,
                }}]),
            );
        }
        json!({"location": location, "sku": {"name": "Standard"}, "properties": properties})
    }

    pub(super) fn interface_body(&mut self, location: &str) -> Value {
        let mut configuration =
            json!({"subnet": {"id": self.reference("Microsoft.Network/virtualNetworks/subnets")}});
        if self.rng.percent(30) {
            configuration["loadBalancerBackendAddressPools"] =
                json!([self.part("backendAddressPools", &["pool", "sub"])]);
        }
        if self.rng.percent(15) {
            configuration["publicIPAddress"] =
                json!({"id": self.reference("Microsoft.Network/publicIPAddresses")});
        }
        if self.rng.percent(15) {
            configuration["privateIPAllocationMethod"] = json!("Static");
            configuration["privateIPAddress"] =
                json!(self.choose(&["10.0.1.10", "10.0.1.4", "10.9.9.9", "fd00::5"]));
        }
        let mut body = json!({
            "location": location,
            "properties": {"ipConfigurations": [{"name": "ipconfig1", "properties": configuration}]}
        });
        if self.rng.percent(20) {
            body["properties"]["networkSecurityGroup"] =
                json!({"id": self.reference("Microsoft.Network/networkSecurityGroups")});
        }
        if self.rng.percent(10) {
            body["properties"]["enableAcceleratedNetworking"] = json!(true);
        }
        body
    }

    pub(super) fn machine_body(&mut self, location: &str) -> Value {
        let size = self.choose(&[
            "Standard_D2s_v3",
            "Standard_B2s",
            "Standard_D4s_v3",
            "Standard_DC2as_v5",
            "Standard_Nope",
        ]);
        let image = match self.rng.below(4) {
            0 => {
                json!({"communityGalleryImageId": "/CommunityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/Images/capi-ubun2-2404/Versions/1.33.5"})
            }
            1 => {
                json!({"publisher": "cncf-upstream", "offer": "capi-windows", "sku": "windows-2019-containerd-gen1", "version": "latest"})
            }
            _ => {
                json!({"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "latest"})
            }
        };
        let mut body = json!({
            "location": location,
            "properties": {
                "hardwareProfile": {"vmSize": size},
                "storageProfile": {
                    "imageReference": image,
                    "osDisk": {"osType": "Linux", "createOption": "FromImage", "diskSizeGB": 128, "managedDisk": {"storageAccountType": "Premium_LRS"}, "deleteOption": self.choose(&["Delete", "Detach"])}
                },
                "osProfile": {
                    "computerName": "node",
                    "adminUsername": "capi",
                    "adminPassword": "Not-to-be-seen-1",
                    "customData": "I2Nsb3VkLWNvbmZpZwo=",
                    "linuxConfiguration": {
                        "disablePasswordAuthentication": true,
                        "ssh": {"publicKeys": [{"path": "/home/capi/.ssh/authorized_keys", "keyData": "ssh-ed25519 AAAA"}]}
                    }
                },
                "networkProfile": {"networkInterfaces": [{"id": self.reference("Microsoft.Network/networkInterfaces"), "properties": {"primary": true, "deleteOption": self.choose(&["Delete", "Detach"])}}]}
            }
        });
        if self.rng.percent(30) {
            body["properties"]["storageProfile"]["dataDisks"] = match self.rng.below(3) {
                0 => {
                    json!([{"lun": 0, "createOption": "Attach", "managedDisk": {"id": self.reference("Microsoft.Compute/disks")}}])
                }
                _ => {
                    json!([{"lun": 0, "createOption": "Empty", "diskSizeGB": 64, "name": self.choose(&["data", "a", "b"])}])
                }
            };
        }
        if self.rng.percent(15) {
            body["zones"] = json!([self.choose(&["1", "2", "4"])]);
        }
        if self.rng.percent(10) {
            body["properties"]["securityProfile"] = json!({"securityType": "ConfidentialVM"});
        }
        if self.rng.percent(15) {
            body["properties"]["availabilitySet"] =
                json!({"id": self.reference("Microsoft.Compute/availabilitySets")});
        }
        if self.rng.percent(15) {
            let identity = self.reference("Microsoft.ManagedIdentity/userAssignedIdentities");
            let mut assigned = Map::new();
            assigned.insert(identity, json!({}));
            body["identity"] =
                json!({"type": "SystemAssigned, UserAssigned", "userAssignedIdentities": assigned});
        }
        body
    }

    pub(super) fn disk_body(&mut self, location: &str) -> Value {
        let creation = match self.rng.below(5) {
            0 => {
                json!({"createOption": "Upload", "uploadSizeBytes": self.choose(&[32_212_255_232_i64 + 512, 512, 0, -1, i64::MAX, i64::MIN])})
            }
            1 => {
                json!({"createOption": "Copy", "sourceResourceId": self.reference("Microsoft.Compute/disks")})
            }
            2 => {
                json!({"createOption": "Import", "sourceUri": "https://example.blob.core.windows.net/vhds/a.vhd"})
            }
            _ => json!({"createOption": "Empty"}),
        };
        json!({
            "location": location,
            "sku": {"name": self.choose(&["Premium_LRS", "Standard_LRS", "UltraSSD_LRS", "PremiumV2_LRS"])},
            "properties": {"creationData": creation, "diskSizeGB": self.choose(&[64, 1, 32_767, 65_536])}
        })
    }

    pub(super) fn snapshot_body(&mut self, location: &str) -> Value {
        let creation = match self.rng.below(4) {
            0 => {
                let source = *self
                    .rng
                    .pick(&["Microsoft.Compute/disks", "Microsoft.Compute/snapshots"]);
                json!({"createOption": "Copy", "sourceResourceId": self.reference(source)})
            }
            1 => {
                json!({"createOption": "Import", "sourceUri": "https://example.blob.core.windows.net/vhds/a.vhd"})
            }
            _ => json!({"createOption": "Empty"}),
        };
        json!({
            "location": location,
            "sku": {"name": self.choose(&["Standard_LRS", "Premium_LRS", "Standard_ZRS", "UltraSSD_LRS"])},
            "properties": {"creationData": creation, "diskSizeGB": self.choose(&[32, 1, 32_767, 65_536]), "incremental": self.choose(&[true, false])}
        })
    }

    /// A managed image of a snapshot or a blob (a managed disk would be a reference the image
    /// keeps while Azure lets the disk go), or of a machine.
    pub(super) fn image_body(&mut self, location: &str) -> Value {
        let mut os_disk = json!({"osType": self.choose(&["Linux", "Windows"]), "osState": self.choose(&["Generalized", "Specialized", "Frozen"])});
        match self.rng.below(3) {
            0 => os_disk["blobUri"] = json!("https://example.blob.core.windows.net/vhds/a.vhd"),
            _ => os_disk["snapshot"] = json!({"id": self.reference("Microsoft.Compute/snapshots")}),
        }
        let mut body = json!({"location": location, "properties": {
            "hyperVGeneration": self.choose(&["V1", "V2"]),
            "storageProfile": {"osDisk": os_disk},
        }});
        if self.rng.percent(20) {
            body["properties"]["sourceVirtualMachine"] =
                json!({"id": self.reference("Microsoft.Compute/virtualMachines")});
        }
        body
    }

    pub(super) fn gallery_body(&mut self, location: &str) -> Value {
        let mut body = json!({"location": location, "properties": {"description": "fuzz"}});
        if self.rng.percent(30) {
            body["properties"]["sharingProfile"] = json!({
                "permissions": self.choose(&["Community", "Groups", "Private", "Everyone"]),
                "communityGalleryInfo": {"publisherUri": "https://capz.example", "publisherContact": "capz@example.com", "eula": "none", "publicNamePrefix": "capz"},
            });
        }
        body
    }

    pub(super) fn version_body(&mut self, location: &str) -> Value {
        let source = *self.rng.pick(&[
            "Microsoft.Compute/images",
            "Microsoft.Compute/snapshots",
            "Microsoft.Compute/galleries/images/versions",
        ]);
        let regions = [
            json!([]),
            json!([{"name": location}]),
            json!([{"name": "nowhere"}]),
        ];
        json!({"location": location, "properties": {
            "publishingProfile": {
                "replicaCount": self.choose(&[1, 2, 0]),
                "targetRegions": regions[self.choose(&[0, 1, 2])],
            },
            "storageProfile": {"source": {"id": self.reference(source)}},
        }})
    }

    pub(super) fn scale_set_body(&mut self, location: &str) -> Value {
        let mut body = json!({
            "location": location,
            "sku": {"name": self.choose(&["Standard_D2s_v3", "Standard_Nope"]), "capacity": self.choose(&[2, 0, 5, -1, 1001])},
            "properties": {
                "orchestrationMode": self.choose(&["Uniform", "Flexible", "Sideways"]),
                "upgradePolicy": {"mode": self.choose(&["Manual", "Rolling", "Automatic"])},
                "virtualMachineProfile": {
                    "osProfile": {"computerNamePrefix": "pool", "adminUsername": "capi"},
                    "storageProfile": {"imageReference": {"publisher": "cncf-upstream", "offer": "capi", "sku": "ubuntu-2204-gen1", "version": "latest"}},
                    "networkProfile": {"networkInterfaceConfigurations": [{"name": "nic", "properties": {
                        "primary": true,
                        "ipConfigurations": [{"name": "ipconfig", "properties": {
                            "subnet": {"id": self.reference("Microsoft.Network/virtualNetworks/subnets")},
                        }}],
                    }}]},
                },
            },
        });
        if self.rng.percent(30) {
            body["zones"] = json!(["1", "2"]);
        }
        if self.rng.percent(15) {
            body["properties"]["virtualMachineProfile"]["priority"] = json!("Spot");
        }
        body
    }

    pub(super) fn managed_cluster_body(&mut self, location: &str) -> Value {
        let mut pool = self.agent_pool_properties();
        pool["name"] = json!(self.choose(&["sys", "sys", "Bad_Pool"]));
        pool["mode"] = json!(self.choose(&["System", "System", "User"]));
        let mut body = json!({
            "location": location,
            "identity": {"type": "SystemAssigned"},
            "properties": {
                "kubernetesVersion": self.choose(&["1.33", "1.32.9", "1.34", "1.20", "latest"]),
                "dnsPrefix": "fz",
                "agentPoolProfiles": [pool],
                "addonProfiles": null,
            },
        });
        if self.rng.percent(30) {
            body["properties"]["networkProfile"] =
                json!({"networkPlugin": self.choose(&["azure", "kubenet", "none", "flannel"])});
        }
        if self.rng.percent(20) {
            body["properties"]["apiServerAccessProfile"] = json!({"enablePrivateCluster": true});
        }
        body
    }

    pub(super) fn agent_pool_properties(&mut self) -> Value {
        let mut properties = json!({
            "count": self.choose(&[1, 2, 0, -1, 1001]),
            "vmSize": self.choose(&["Standard_D2s_v3", "Standard_D2s_v3", "Standard_Nope"]),
            "mode": self.choose(&["User", "System", "Sideways"]),
            "nodeLabels": {},
            "nodeTaints": match self.choose(&[0, 1, 2]) {
                0 => json!([]),
                1 => json!(["dedicated=batch:NoSchedule"]),
                _ => json!(["broken"]),
            },
            "availabilityZones": null,
        });
        if self.rng.percent(25) {
            properties["orchestratorVersion"] = json!(self.choose(&["1.33", "1.32.9", "1.35.0", "9.9"]));
        }
        if self.rng.percent(20) {
            properties["enableAutoScaling"] = json!(true);
            properties["minCount"] = json!(self.choose(&[1, 3]));
            properties["maxCount"] = json!(self.choose(&[2, 5]));
        }
        if self.rng.percent(15) {
            properties["osType"] = json!("Windows");
        }
        properties
    }

    pub(super) fn role_assignment_body(&mut self) -> Value {
        let principal = match self.rng.below(5) {
            0 => "11111111-2222-3333-4444-555555555555".to_owned(),
            1 => self.reference("Microsoft.ManagedIdentity/userAssignedIdentities"),
            _ => OBJECT_ID.to_owned(),
        };
        let role = match self.rng.below(5) {
            0 => self.reference("Microsoft.Authorization/roleDefinitions"),
            1 => format!("/providers/Microsoft.Authorization/roleDefinitions/{OWNER}"),
            _ => format!(
                "/subscriptions/{SUB}/providers/Microsoft.Authorization/roleDefinitions/{CONTRIBUTOR}"
            ),
        };
        json!({"properties": {"principalId": principal, "roleDefinitionId": role, "principalType": "ServicePrincipal"}})
    }

    /// A body for the types private clusters are built from, and for tags; `None` for others.
    fn connectivity_body(&mut self, short: &str, location: &str) -> Option<Value> {
        Some(match short {
            "virtualNetworks/virtualNetworkPeerings" => json!({"properties": {
                "remoteVirtualNetwork": {"id": self.reference("Microsoft.Network/virtualNetworks")},
                "allowForwardedTraffic": self.choose(&[false, true]),
            }}),
            "bastionHosts" => {
                json!({"location": location, "sku": {"name": self.choose(&["Basic", "Standard", "Premium"])}, "properties": {
                    "scaleUnits": self.choose(&[2, 3, 60]),
                    "ipConfigurations": [{"name": "default", "properties": {
                        "subnet": {"id": self.reference("Microsoft.Network/virtualNetworks/subnets")},
                        "publicIPAddress": {"id": self.reference("Microsoft.Network/publicIPAddresses")},
                    }}],
                }})
            }
            "privateDnsZones" => json!({"location": self.choose(&["global", "westeurope"])}),
            "privateDnsZones/virtualNetworkLinks" => json!({"location": "global", "properties": {
                "registrationEnabled": self.choose(&[false, true]),
                "virtualNetwork": {"id": self.reference("Microsoft.Network/virtualNetworks")},
            }}),
            "privateDnsZones/A" => json!({"properties": {
                "ttl": self.choose(&[300, -1]),
                "aRecords": [{"ipv4Address": self.choose(&["10.0.0.4", "fd00::4", "x"])}],
            }}),
            "privateEndpoints" => {
                let target = if self.rng.percent(50) {
                    self.reference("Microsoft.Storage/storageAccounts")
                } else {
                    self.reference("Microsoft.Network/privateLinkServices")
                };
                let property = self.choose(&[
                    "privateLinkServiceConnections",
                    "manualPrivateLinkServiceConnections",
                ]);
                let mut body = json!({"location": location, "properties": {
                    "subnet": {"id": self.reference("Microsoft.Network/virtualNetworks/subnets")},
                }});
                body["properties"][property] = json!([{"name": "connection", "properties": {
                    "privateLinkServiceId": target,
                    "groupIds": [self.choose(&["blob", "file", "nope"])],
                }}]);
                body
            }
            "privateEndpoints/privateDnsZoneGroups" => json!({"properties": {"privateDnsZoneConfigs": [{
                "name": "config",
                "properties": {"privateDnsZoneId": self.reference("Microsoft.Network/privateDnsZones")},
            }]}}),
            "privateLinkServices" => json!({"location": location, "properties": {
                "loadBalancerFrontendIpConfigurations": [self.part("frontendIPConfigurations", &["fe", "sub"])],
                "ipConfigurations": [{"name": "nat", "properties": {
                    "subnet": {"id": self.reference("Microsoft.Network/virtualNetworks/subnets")},
                }}],
                "autoApproval": {"subscriptions": [SUB]},
            }}),
            "storageAccounts" => json!({"location": location,
                "kind": self.choose(&["StorageV2", "BlobStorage", "Nope"]),
                "sku": {"name": self.choose(&["Standard_LRS", "Premium_ZRS", "Cheap"])},
                "properties": {"keyPolicy": {"keyExpirationPeriodInDays": self.choose(&[30, -1])}},
            }),
            "tags" => {
                let name = self.choose(&["fuzz", "other", "a/b"]);
                json!({
                    "operation": self.choose(&["Merge", "Replace", "Delete", "Nope"]),
                    "properties": {"tags": {name: self.choose(&["yes", "", "no"])}},
                })
            }
            "privateDnsZones/CNAME" => {
                json!({"properties": {"ttl": 3600, "cnameRecord": {"cname": "target.example"}}})
            }
            _ => return None,
        })
    }

    /// A body a client would send to create a resource of type `kind`.
    pub(super) fn valid_body(&mut self, kind: &str, own: &str) -> Value {
        let location = self.location();
        let short = kind.split_once('/').map_or(kind, |(_, short)| short);
        if let Some(body) = self.connectivity_body(short, location) {
            return body;
        }
        match short {
            "virtualNetworks" => {
                let subnet = self.subnet_properties();
                json!({"location": location, "tags": {"fuzz": "yes"}, "properties": {
                    "addressSpace": {"addressPrefixes": [self.choose(PREFIXES)]},
                    "subnets": [{"name": "sub", "properties": subnet}]
                }})
            }
            "virtualNetworks/subnets" => json!({"properties": self.subnet_properties()}),
            "networkSecurityGroups" => {
                let rule = self.security_rule();
                json!({"location": location, "properties": {"securityRules": [{"name": "sub", "properties": rule}]}})
            }
            "networkSecurityGroups/securityRules" => json!({"properties": self.security_rule()}),
            "routeTables" => {
                json!({"location": location, "properties": {"routes": [{"name": "sub", "properties": self.route()}]}})
            }
            "routeTables/routes" => json!({"properties": self.route()}),
            "natGateways" => {
                json!({"location": location, "sku": {"name": "Standard"}, "properties": {"publicIpAddresses": [{"id": self.reference("Microsoft.Network/publicIPAddresses")}]}})
            }
            "publicIPAddresses" => {
                let mut body = json!({"location": location, "sku": {"name": self.choose(&["Standard", "Basic"])}, "properties": {
                    "publicIPAllocationMethod": self.choose(&["Static", "Dynamic"]),
                    "publicIPAddressVersion": self.choose(&["IPv4", "IPv4", "IPv6"]),
                }});
                if self.rng.percent(40) {
                    body["properties"]["dnsSettings"] =
                        json!({"domainNameLabel": self.choose(&["api", "api2"])});
                }
                if self.rng.percent(20) {
                    body["properties"]["publicIPPrefix"] =
                        json!({"id": self.reference("Microsoft.Network/publicIPPrefixes")});
                }
                body
            }
            "publicIPPrefixes" => json!({"location": location, "sku": {"name": "Standard"}, "properties": {
                "prefixLength": self.choose(&[28, 31, 21, 124, 0, 255, 256, -1]),
                "publicIPAddressVersion": self.choose(&["IPv4", "IPv4", "IPv6"]),
            }}),
            "loadBalancers" => self.balancer_body(location, own),
            "networkInterfaces" => self.interface_body(location),
            "networkInterfaces/ipConfigurations" => {
                json!({"properties": {"subnet": {"id": self.reference("Microsoft.Network/virtualNetworks/subnets")}}})
            }
            "userAssignedIdentities" => json!({"location": location, "tags": {"fuzz": "yes"}}),
            "userAssignedIdentities/federatedIdentityCredentials" => json!({"properties": {
                "issuer": self.choose(&["https://kind-control-plane:6443", "http://insecure"]),
                "subject": "system:serviceaccount:capz-system:capz-manager",
                "audiences": ["api://AzureADTokenExchange"],
            }}),
            "roleAssignments" => self.role_assignment_body(),
            "roleDefinitions" => json!({"properties": {
                "roleName": "fuzz role",
                "permissions": [{"actions": ["Microsoft.Network/*/read"], "notActions": []}],
                "assignableScopes": [format!("/subscriptions/{SUB}")],
            }}),
            "virtualMachines" => self.machine_body(location),
            "virtualMachines/extensions" => json!({"location": location, "properties": {
                "publisher": "Microsoft.Azure.Extensions", "type": "CustomScript", "typeHandlerVersion": "2.1",
                "settings": {"commandToExecute": "true"}, "protectedSettings": {"secret": "not-to-be-seen"},
            }}),
            "disks" => self.disk_body(location),
            "snapshots" => self.snapshot_body(location),
            "images" => self.image_body(location),
            "galleries" => self.gallery_body(location),
            "galleries/images" => json!({"location": location, "properties": {
                "osType": self.choose(&["Linux", "Windows", "Solaris"]),
                "osState": self.choose(&["Generalized", "Specialized"]),
                "hyperVGeneration": self.choose(&["V1", "V2", "V3"]),
                "identifier": {"publisher": "capz", "offer": "capi", "sku": self.choose(&["ubuntu-2404", "ubuntu-2204"])},
                "features": [{"name": "SecurityType", "value": "TrustedLaunchSupported"}],
            }}),
            "galleries/images/versions" => self.version_body(location),
            "capacityReservationGroups" => {
                let zones = [json!([]), json!(["1"]), json!(["1", "2", "3"]), json!(["9"])];
                json!({"location": location, "zones": zones[self.choose(&[0, 1, 2, 3])]})
            }
            "capacityReservationGroups/capacityReservations" => {
                let zones = [json!([]), json!(["1"]), json!(["2", "3"])];
                json!({"location": location,
                    "sku": {"name": self.choose(&["Standard_D2s_v3", "Standard_Nope"]), "capacity": self.choose(&[2, 0, -1])},
                    "zones": zones[self.choose(&[0, 1, 2])],
                })
            }
            "virtualMachineScaleSets" => self.scale_set_body(location),
            "managedClusters" => self.managed_cluster_body(location),
            "managedClusters/agentPools" => json!({"properties": self.agent_pool_properties()}),
            "managedClusters/maintenanceConfigurations" => json!({"properties": {"maintenanceWindow": {
                "durationHours": self.choose(&[4, 8, 0]),
                "schedule": {"weekly": {"dayOfWeek": "Saturday", "intervalWeeks": 1}},
                "startTime": "00:00",
                "notAllowedDates": null,
            }}}),
            "virtualMachineScaleSets/extensions" => json!({"properties": {
                "publisher": "Microsoft.Azure.Extensions", "type": "CustomScript", "typeHandlerVersion": "2.1",
            }}),
            "virtualMachineScaleSets/virtualMachines" => {
                json!({"properties": {"protectionPolicy": {"protectFromScaleIn": self.choose(&[true, false])}}})
            }
            "availabilitySets" => {
                json!({"location": location, "sku": {"name": self.choose(&["Aligned", "Classic"])}, "properties": {
                    "platformFaultDomainCount": self.choose(&[2, 3, 0, 99]), "platformUpdateDomainCount": 5,
                }})
            }
            "loadBalancers/frontendIPConfigurations"
            | "loadBalancers/backendAddressPools"
            | "loadBalancers/loadBalancingRules"
            | "loadBalancers/probes"
            | "loadBalancers/inboundNatRules"
            | "loadBalancers/outboundRules"
            | "loadBalancers/inboundNatPools" => {
                let property = short.rsplit('/').next().unwrap_or_default();
                json!({"properties": self.balancer_part(property)})
            }
            _ => self.group_body(),
        }
    }

    /// A value of any JSON type: small, huge, odd, or nested deep.
    pub(super) fn garbage(&mut self, depth: usize) -> Value {
        let choices = if depth == 0 { 15 } else { 18 };
        match self.rng.below(choices) {
            0 => Value::Null,
            1 => json!(true),
            2 => json!(0),
            3 => json!(-1),
            4 => json!(1.5),
            5 => json!(1e300),
            6 => json!(i64::MIN),
            7 => json!(u64::MAX),
            8 => json!(i64::MAX),
            9 => json!(""),
            10 => json!("x"),
            11 => json!("z".repeat(1 + self.rng.below(20_000))),
            12 => json!(*self.rng.pick(&[
                "é\u{0}\u{1F600}",
                "\u{202e}",
                "null",
                "10.0.0.0/33",
                "-1",
                "*",
                "::/128"
            ])),
            13 => {
                let kind = self.rng.pick(KINDS).0;
                json!(self.reference(kind))
            }
            14 => json!({"id": self.rng.pick(BROKEN_IDS)}),
            15 => {
                let items = (0..self.rng.below(4)).map(|_| self.garbage(depth - 1)).collect();
                Value::Array(items)
            }
            16 => {
                let mut object = Map::new();
                for _ in 0..self.rng.below(4) {
                    let key = (*self.rng.pick(&["id", "name", "properties", "location", "", "x"])).to_owned();
                    object.insert(key, self.garbage(depth - 1));
                }
                Value::Object(object)
            }
            _ => {
                let mut value = json!("bottom");
                for level in 0..self.rng.below(120) {
                    value = if level % 2 == 0 {
                        json!([value])
                    } else {
                        json!({"properties": value})
                    };
                }
                value
            }
        }
    }

    /// Breaks one place of a JSON value: a wrong type, a removed or extra property, another id.
    pub(super) fn mutate(&mut self, value: &mut Value) {
        let mut pointers = Vec::new();
        pointers_of(value, String::new(), &mut pointers);
        let pointer = self.rng.pick(&pointers).clone();
        match self.rng.below(10) {
            0..=4 => {
                let garbage = self.garbage(2);
                if let Some(target) = value.pointer_mut(&pointer) {
                    *target = garbage;
                }
            }
            5 | 6 => remove(value, &pointer),
            7 => {
                let garbage = self.garbage(1);
                let key =
                    (*self
                        .rng
                        .pick(&["unknown", "id", "name", "etag", "provisioningState", "properties"]))
                    .to_owned();
                match value.pointer_mut(&pointer) {
                    Some(Value::Object(object)) => {
                        object.insert(key, garbage);
                    }
                    Some(Value::Array(items)) => items.push(garbage),
                    _ => {}
                }
            }
            8 => {
                let kind = self.rng.pick(KINDS).0;
                let id = if self.rng.percent(50) {
                    self.reference(kind)
                } else {
                    (*self.rng.pick(BROKEN_IDS)).to_owned()
                };
                if let Some(target) = value.pointer_mut(&pointer) {
                    if target.is_string() {
                        *target = json!(id);
                    } else if let Some(object) = target.as_object_mut() {
                        object.insert("id".into(), json!(id));
                    }
                }
            }
            _ => {
                if let Some(target) = value.pointer_mut(&pointer) {
                    *target = Value::Null;
                }
            }
        }
    }

    /// Breaks a serialized body: truncated, garbled, not JSON, or JSON of the wrong shape.
    pub(super) fn break_bytes(&mut self, mut bytes: Vec<u8>) -> Vec<u8> {
        match self.rng.below(13) {
            0 => {
                let at = self.rng.below(bytes.len());
                bytes.truncate(at);
            }
            1 => {
                let at = self.rng.below(bytes.len());
                let byte = u8::try_from(self.rng.below(256)).unwrap();
                if let Some(slot) = bytes.get_mut(at) {
                    *slot = byte;
                }
            }
            2 => bytes.clear(),
            3 => bytes = b" \n\t ".to_vec(),
            4 => bytes.splice(0..0, [0xef, 0xbb, 0xbf]).for_each(drop),
            5 => bytes.extend_from_slice(b"}trailing"),
            6 => {
                // A number out of every range, or beyond the precision of any integer type.
                let number =
                    *self
                        .rng
                        .pick(&["1e999", "-1e999", "123456789012345678901234567890", "-0", "1.0e2"]);
                let text = String::from_utf8_lossy(&bytes).into_owned();
                bytes = match text.find(|c: char| c.is_ascii_digit()) {
                    Some(at) => {
                        let end = text[at..]
                            .find(|c: char| !c.is_ascii_digit())
                            .map_or(text.len(), |length| at + length);
                        format!("{}{number}{}", &text[..at], &text[end..]).into_bytes()
                    }
                    None => format!("{{\"location\": {number}}}").into_bytes(),
                };
            }
            7 => {
                if let Some(at) = bytes.iter().position(|byte| *byte == b'"') {
                    let after = at + 1;
                    bytes.splice(after..after, [0xff, 0xfe]).for_each(drop);
                }
            }
            8 => {
                if let Some(at) = bytes.iter().position(|byte| *byte == b'{') {
                    let after = at + 1;
                    let duplicates = b"\"location\": 1, \"properties\": [], ";
                    bytes
                        .splice(after..after, duplicates.iter().copied())
                        .for_each(drop);
                }
            }
            9 => {
                bytes = (*self
                    .rng
                    .pick(&[&b"null"[..], b"[]", b"\"x\"", b"42", b"true", b"[{}]"]))
                .to_vec();
            }
            10 => bytes = b"location=westeurope&properties=1".to_vec(),
            11 => bytes = "[".repeat(1 + self.rng.below(5000)).into_bytes(),
            _ => bytes = "{\"a\":".repeat(1 + self.rng.below(300)).into_bytes(),
        }
        bytes
    }

    pub(super) fn put_body(&mut self, kind: Option<&str>, own: &str) -> Vec<u8> {
        let mut value = match kind {
            Some(RESOURCE_GROUPS) | None => self.group_body(),
            Some(kind) => self.valid_body(kind, own),
        };
        match self.rng.below(100) {
            0..=49 => {}
            50..=87 => {
                for _ in 0..=self.rng.below(3) {
                    self.mutate(&mut value);
                }
            }
            _ => return self.break_bytes(serde_json::to_vec(&value).unwrap()),
        }
        serde_json::to_vec(&value).unwrap()
    }

    pub(super) fn patch_body(&mut self, kind: Option<&str>, own: &str) -> Vec<u8> {
        let mut value = match self.rng.below(10) {
            0..=3 => json!({"tags": {"patched": "yes"}}),
            4 => json!({"tags": null}),
            5 => json!({"properties": null}),
            6 => json!({"location": self.location()}),
            _ => {
                let mut value = match kind {
                    Some(RESOURCE_GROUPS) | None => self.group_body(),
                    Some(kind) => self.valid_body(kind, own),
                };
                if let Some(object) = value.as_object_mut() {
                    let keys: Vec<String> = object.keys().cloned().collect();
                    if let Some(key) = keys.get(self.rng.below(keys.len())) {
                        object.remove(key);
                    }
                }
                value
            }
        };
        if self.rng.percent(40) {
            self.mutate(&mut value);
        }
        if self.rng.percent(10) {
            return self.break_bytes(serde_json::to_vec(&value).unwrap());
        }
        serde_json::to_vec(&value).unwrap()
    }
}

/// Every JSON pointer into `value`, the root included.
fn pointers_of(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            for (key, item) in object {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                pointers_of(item, format!("{at}/{escaped}"), out);
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                pointers_of(item, format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// Removes what a pointer names from its object or array (the root becomes `null`).
fn remove(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        *value = Value::Null;
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(object)) => {
            object.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Ok(index) = last.parse::<usize>()
                && index < items.len()
            {
                items.remove(index);
            }
        }
        _ => {}
    }
}
