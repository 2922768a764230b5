-- Argo CD health check for scheduling.volcano.sh/v1beta1 Queue (Volcano).
--
-- Argo CD runs this in gopher-lua (Lua 5.1) with only the base and table libraries
-- (plus a reduced os): no string.* functions, so text is joined with `..` only.
-- The queue is in `obj`; the script returns {status = ..., message = ...}.
--
-- Volcano reports status.state: Open, Closing (draining after a close), Closed or Unknown.

local status = obj.status
if type(status) ~= "table" or status.state == nil or status.state == "" then
  return {status = "Progressing", message = "Waiting for Volcano to report the queue state"}
end

local state = status.state
if state == "Open" then
  return {status = "Healthy", message = "Queue is Open"}
elseif state == "Closed" then
  return {status = "Suspended", message = "Queue is Closed"}
elseif state == "Closing" then
  return {status = "Progressing", message = "Queue is Closing"}
end

return {status = "Degraded", message = "Queue state is " .. tostring(state)}
