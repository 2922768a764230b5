-- Argo CD health check for kubeflow.org PyTorchJob (Kubeflow Training Operator v1), also
-- installed for MPIJob (kubeflow/mpi-operator v2beta1, whose JobConditionTypes in
-- pkg/apis/kubeflow/v2beta1/types.go are the same six).
--
-- Argo CD runs this in gopher-lua (Lua 5.1) with only the base and table libraries
-- (plus a reduced os): no string.* functions, so text is joined with `..` only.
-- The job is in `obj`; the script returns {status = ..., message = ...}.
--
-- The operator keeps a list of {type, status, reason, message} conditions with the types
-- Created, Running, Restarting, Succeeded, Suspended and Failed; several can be "True"
-- at once, so the checks below run in priority order and the first match decides.
-- Nothing here is kind-specific: the other v1 job kinds use the same conditions.

local function nonEmpty(value)
  if type(value) == "string" and value ~= "" then
    return value
  end
  return nil
end

-- "Reason: message", or whichever of the two is set, or the fallback text.
local function describe(condition, fallback)
  local reason = nonEmpty(condition.reason)
  local message = nonEmpty(condition.message)
  if reason ~= nil and message ~= nil then
    return reason .. ": " .. message
  end
  return message or reason or fallback
end

local function trueCondition(conditions, wanted)
  for _, condition in ipairs(conditions) do
    if type(condition) == "table" and condition.type == wanted and condition.status == "True" then
      return condition
    end
  end
  return nil
end

local kind = nonEmpty(obj.kind) or "job"

local status = obj.status
if type(status) ~= "table" or type(status.conditions) ~= "table" or next(status.conditions) == nil then
  return {
    status = "Progressing",
    message = "Waiting for the operator to report conditions of the " .. kind,
  }
end

-- {condition type, health status, message when the condition carries none}
local rules = {
  {"Failed", "Degraded", kind .. " failed"},
  {"Succeeded", "Healthy", kind .. " succeeded"},
  {"Suspended", "Suspended", kind .. " is suspended"},
  {"Restarting", "Progressing", kind .. " is restarting"},
  {"Running", "Progressing", kind .. " is running"},
  {"Created", "Progressing", kind .. " was created"},
}

for _, rule in ipairs(rules) do
  local condition = trueCondition(status.conditions, rule[1])
  if condition ~= nil then
    return {status = rule[2], message = describe(condition, rule[3])}
  end
end

return {status = "Progressing", message = "Waiting for the " .. kind .. " to start"}
