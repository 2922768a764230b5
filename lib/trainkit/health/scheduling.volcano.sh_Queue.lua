-- Argo CD health check for scheduling.volcano.sh/v1beta1 Queue (Volcano).
--
-- Argo CD runs this in gopher-lua (Lua 5.1) with only the base and table libraries
-- (plus a reduced os): no string.* functions, so text is joined with `..` only.
-- The queue is in `obj`; the script returns {status = ..., message = ...}.
--
-- Always Healthy: a queue's state is never a reason to hold a sync. In a multi-wave sync
-- gitops-engine waits on every resource that is not Healthy before the next wave and fails
-- the sync on Degraded (gitops-engine/pkg/sync/sync_context.go); queues sync before every
-- job, so one Closed, Closing or not-yet-reported queue would hold every team's jobs on the
-- cluster. The state goes into the message instead.
--
-- Volcano reports status.state: Open, Closing (draining after a close), Closed or Unknown;
-- the queue controller, not the spec, sets it (pkg/controllers/queue).

local state = nil
if type(obj.status) == "table" then
  state = obj.status.state
end

if state == nil or state == "" then
  return {status = "Healthy", message = "Volcano has not reported the queue state yet"}
end
if state == "Open" then
  return {status = "Healthy", message = "Queue is Open"}
end
if state == "Closed" then
  return {status = "Healthy", message = "Queue is Closed: Volcano admits no new jobs to it"}
end
if state == "Closing" then
  return {status = "Healthy", message = "Queue is Closing: Volcano admits no new jobs to it"}
end
return {status = "Healthy", message = "Queue state is " .. tostring(state)}
