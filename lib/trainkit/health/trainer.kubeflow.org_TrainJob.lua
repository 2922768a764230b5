-- Argo CD health check for trainer.kubeflow.org/v1alpha1 TrainJob (Kubeflow Trainer v2).
--
-- Argo CD runs this in gopher-lua (Lua 5.1) with only the base and table libraries
-- (plus a reduced os): no string.* functions, so text is joined with `..` only.
-- The job is in `obj`; the script returns {status = ..., message = ...}.
--
-- TrainJob conditions are metav1.Conditions of the types Suspended, Complete and Failed.
-- A resumed job keeps Suspended with status "False" (reason Resumed): that is running.

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

local status = obj.status
if type(status) ~= "table" or type(status.conditions) ~= "table" or next(status.conditions) == nil then
  return {status = "Progressing", message = "Waiting for the trainer controller to report TrainJob conditions"}
end

-- {condition type, health status, message when the condition carries none}
local rules = {
  {"Failed", "Degraded", "TrainJob failed"},
  {"Complete", "Healthy", "TrainJob is complete"},
  {"Suspended", "Suspended", "TrainJob is suspended"},
}

for _, rule in ipairs(rules) do
  local condition = trueCondition(status.conditions, rule[1])
  if condition ~= nil then
    return {status = rule[2], message = describe(condition, rule[3])}
  end
end

return {status = "Progressing", message = "TrainJob is running"}
