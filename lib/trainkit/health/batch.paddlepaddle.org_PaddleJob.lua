-- Argo CD health check for batch.paddlepaddle.org/v1 PaddleJob (PaddleFlow/paddle-operator
-- v0.3.5).
--
-- Argo CD runs this in gopher-lua (Lua 5.1) with only the base and table libraries
-- (plus a reduced os): no string.* functions, so text is joined with `..` only.
-- The job is in `obj`; the script returns {status = ..., message = ...}.
--
-- paddle-operator reports no conditions, only status.phase (api/v1/paddlejob_types.go) and
-- status.mode (PS, Collective or Single). getPaddleJobPhase in controllers/
-- paddlejob_helper.go sets Completed once every pod of every role has exited 0 and Failed as
-- soon as one pod fails; Succeed, Aborted and Terminated are declared but end a job too.

local phase = nil
local mode = nil
if type(obj.status) == "table" then
  phase = obj.status.phase
  mode = obj.status.mode
end

local what = "PaddleJob"
if type(mode) == "string" and mode ~= "" then
  what = "PaddleJob (" .. mode .. ")"
end

if phase == nil or phase == "" then
  return {status = "Progressing", message = "Waiting for paddle-operator to start the PaddleJob"}
end
if phase == "Completed" or phase == "Succeed" then
  return {status = "Healthy", message = what .. " completed: every pod exited 0"}
end
if phase == "Failed" then
  return {status = "Degraded", message = what .. " failed: a pod exited with an error"}
end
if phase == "Aborted" or phase == "Terminated" then
  return {status = "Degraded", message = what .. " is " .. phase .. " before completing"}
end
return {status = "Progressing", message = what .. " is " .. tostring(phase)}
