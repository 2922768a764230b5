-- Argo CD health check for kueue.x-k8s.io/v1beta2 ClusterQueue and LocalQueue (Kueue v0.19).
--
-- Argo CD runs this in gopher-lua (Lua 5.1) with only the base and table libraries
-- (plus a reduced os): no string.* functions, so text is joined with `..` only.
-- The queue is in `obj`; the script returns {status = ..., message = ...}.
--
-- Always Healthy, like Volcano's Queue: Kueue's queues sync in waves before every job, and
-- gitops-engine waits on anything not Healthy before the next wave and fails the sync on
-- Degraded (gitops-engine/pkg/sync/sync_context.go), so an inactive queue would hold every
-- team's jobs; Kueue keeps those jobs suspended anyway. The state goes into the message.
--
-- Kueue reports a condition of type Active (apis/kueue/v1beta2/clusterqueue_types.go and
-- localqueue_types.go): True with reason Ready, else False with reasons such as
-- FlavorNotFound, Stopped or Terminating (ClusterQueue) and ClusterQueueDoesNotExist or
-- ClusterQueueIsInactive (LocalQueue), and a message.

local kind = "Queue"
if type(obj.kind) == "string" then
  kind = obj.kind
end

local active = nil
if type(obj.status) == "table" and type(obj.status.conditions) == "table" then
  for _, c in ipairs(obj.status.conditions) do
    if type(c) == "table" and c.type == "Active" then
      active = c
    end
  end
end

if active == nil then
  return {status = "Healthy", message = "Kueue has not reported whether the " .. kind .. " is active yet"}
end

local why = ""
if type(active.reason) == "string" and active.reason ~= "" then
  why = active.reason
end
if type(active.message) == "string" and active.message ~= "" then
  if why ~= "" then
    why = why .. ": " .. active.message
  else
    why = active.message
  end
end

if active.status == "True" then
  return {status = "Healthy", message = kind .. " is active"}
end
local text = kind .. " is not active: Kueue admits no job through it"
if why ~= "" then
  text = text .. " (" .. why .. ")"
end
return {status = "Healthy", message = text}
