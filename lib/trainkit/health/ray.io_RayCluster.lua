-- Argo CD health check for ray.io/v1 RayCluster (ray-project/kuberay v1.7.0).
--
-- Argo CD v3.5.1 ships none for ray.io (resource_customizations/ has no ray.io directory), so
-- a RayCluster would show Healthy as soon as it exists. Lua 5.1 in gopher-lua: base and table
-- libraries only, text joined with `..`.
--
-- ray-operator/apis/ray/v1/raycluster_types.go: status.conditions (the RayClusterStatusConditions
-- gate is on by default in v1.7.0, pkg/features/features.go) of the types
--   RayClusterProvisioned: every Ray pod ready once; stays True after that;
--   HeadPodReady: the head pod is ready now;
--   ReplicaFailure: a pod could not be created or deleted (reason, message);
--   RayClusterSuspending / RayClusterSuspended: spec.suspend (Kueue's until it admits it);
-- status.state ("ready", "suspended") is deprecated but still written. Set in
-- raycluster_controller.go calculateStatus and reconcilePods.

local function nonEmpty(value)
  if type(value) == "string" and value ~= "" then
    return value
  end
  return nil
end

local status = obj.status
if type(status) ~= "table" then
  status = {}
end

local conditions = {}
if type(status.conditions) == "table" then
  for _, c in ipairs(status.conditions) do
    if type(c) == "table" and type(c.type) == "string" then
      conditions[c.type] = c
    end
  end
end

local function isTrue(kind)
  local c = conditions[kind]
  return c ~= nil and c.status == "True"
end

local function detail(kind)
  local c = conditions[kind]
  if c == nil then
    return nil
  end
  local reason = nonEmpty(c.reason)
  local message = nonEmpty(c.message)
  if reason ~= nil and message ~= nil then
    return reason .. ": " .. message
  end
  return message or reason
end

local function withDetail(text, more)
  if more ~= nil then
    return text .. ": " .. more
  end
  return text
end

local queue = nil
if type(obj.metadata) == "table" and type(obj.metadata.labels) == "table" then
  queue = nonEmpty(obj.metadata.labels["kueue.x-k8s.io/queue-name"])
end
local waits = "waiting to be admitted (e.g. by Kueue) or for spec.suspend to be set to false"
if queue ~= nil then
  waits = "waiting for Kueue to admit it to LocalQueue " .. queue
end

if isTrue("RayClusterSuspended") or status.state == "suspended" then
  return {status = "Suspended", message = "RayCluster is suspended (no pods): " .. waits}
end
if isTrue("RayClusterSuspending") then
  return {
    status = "Suspended",
    message = "RayCluster is being suspended, KubeRay is deleting its pods: " .. waits,
  }
end
if isTrue("ReplicaFailure") then
  return {
    status = "Degraded",
    message = withDetail("KubeRay failed to create or delete a Ray pod", detail("ReplicaFailure")),
  }
end
local provisioned = isTrue("RayClusterProvisioned")
if provisioned and isTrue("HeadPodReady") then
  return {status = "Healthy", message = "RayCluster is ready: every Ray pod came up and the head is ready"}
end
if provisioned then
  return {
    status = "Degraded",
    message = withDetail("RayCluster's head pod is not ready (it was before)", detail("HeadPodReady")),
  }
end
if conditions["RayClusterProvisioned"] == nil and status.state == "ready" then
  return {status = "Healthy", message = "RayCluster is ready"}
end
return {
  status = "Progressing",
  message = withDetail(
    "RayCluster is starting: waiting for every Ray pod to be ready",
    detail("RayClusterProvisioned")
  ),
}
