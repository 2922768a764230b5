-- Argo CD health check for ray.io/v1 RayJob (ray-project/kuberay v1.7.0).
--
-- Argo CD runs this in gopher-lua (Lua 5.1) with only the base and table libraries
-- (plus a reduced os): no string.* functions, so text is joined with `..` only.
-- The job is in `obj`; the script returns {status = ..., message = ...}.
--
-- KubeRay reports no conditions on a RayJob. ray-operator/apis/ray/v1/rayjob_types.go gives
-- status.jobDeploymentStatus (the RayJob's own lifecycle: "" (new), Initializing, Waiting,
-- Running, Complete, Failed, ValidationFailed, Suspending, Suspended, Retrying), status.jobStatus
-- (the Ray job's: "", PENDING, RUNNING, STOPPED, SUCCEEDED, FAILED), status.reason and
-- status.message, and the counters status.failed and status.succeeded. The transitions, in
-- Reconcile of ray-operator/controllers/ray/rayjob_controller.go:
--   * "" -> Initializing (initRayJobStatusIfNeed); Initializing -> Running, or -> Waiting in
--     InteractiveMode until spec.jobId names the job a user submitted.
--   * Running -> Complete once the Ray job is SUCCEEDED or STOPPED (and the submitter, if any,
--     has finished), -> Failed once it is FAILED (reason AppFailed) or on SubmissionFailed,
--     DeadlineExceeded, JobStatusCheckTimeoutExceeded, ...; Initializing fails on
--     DeadlineExceeded or PreRunningDeadlineExceeded, Waiting on PreRunningDeadlineExceeded.
--     Complete and Failed are terminal (IsJobDeploymentTerminal); KubeRay never sets Complete
--     with jobStatus FAILED.
--   * checkBackoffLimitAndUpdateStatusIfNeeded counts status.failed and turns Failed into
--     Retrying while status.failed < spec.backoffLimit + 1 (never for DeadlineExceeded or
--     JobStatusCheckTimeoutExceeded); Retrying deletes the RayCluster and goes back to "",
--     keeping status.failed. A Failed that is stored is therefore final.
--   * validateRayJob sets ValidationFailed (reason ValidationFailed, message the error) when the
--     metadata, spec or status is refused; Reconcile has no case for that state, so the RayJob
--     stays there even once the spec is fixed.
--   * spec.suspend (set by Kueue until it admits the job) turns Initializing or Running into
--     Suspending, which deletes the RayCluster and becomes Suspended; Suspended goes back to ""
--     once spec.suspend is false.

local function nonEmpty(value)
  if type(value) == "string" and value ~= "" then
    return value
  end
  return nil
end

local function count(value)
  if type(value) == "number" and value > 0 then
    return value
  end
  return nil
end

-- "reason: message", or whichever of the two is set, or nil.
local function describe(status)
  local reason = nonEmpty(status.reason)
  local message = nonEmpty(status.message)
  if reason ~= nil and message ~= nil then
    return reason .. ": " .. message
  end
  return message or reason
end

-- text, then ": detail" when there is one.
local function withDetail(text, detail)
  if detail ~= nil then
    return text .. ": " .. detail
  end
  return text
end

local status = obj.status
if type(status) ~= "table" then
  status = {}
end
local spec = obj.spec
if type(spec) ~= "table" then
  spec = {}
end

local deployment = nonEmpty(status.jobDeploymentStatus)
local jobStatus = nonEmpty(status.jobStatus)
local failed = count(status.failed)
local cluster = nonEmpty(status.rayClusterName)

local theCluster = "its RayCluster"
if cluster ~= nil then
  theCluster = "RayCluster " .. cluster
end
local rayJob = ""
if jobStatus ~= nil then
  rayJob = " (Ray job " .. jobStatus .. ")"
end

if deployment == nil then
  if failed ~= nil then
    return {
      status = "Progressing",
      message = "Waiting for KubeRay to start the RayJob again after " .. tostring(failed)
        .. " failed attempt(s)",
    }
  end
  return {status = "Progressing", message = "Waiting for KubeRay to start the RayJob"}
end

if deployment == "Complete" then
  if jobStatus == "SUCCEEDED" then
    return {
      status = "Healthy",
      message = withDetail("RayJob complete, the Ray job SUCCEEDED", describe(status)),
    }
  end
  local outcome = "reported no status (not SUCCEEDED)"
  if jobStatus ~= nil then
    outcome = "is " .. jobStatus .. ", not SUCCEEDED"
  end
  return {
    status = "Degraded",
    message = withDetail("RayJob complete but the Ray job " .. outcome, describe(status)),
  }
end

if deployment == "Failed" then
  local text = "RayJob failed"
  if failed ~= nil and failed > 1 then
    text = text .. " after " .. tostring(failed) .. " attempts"
  end
  return {status = "Degraded", message = withDetail(text .. rayJob, describe(status))}
end

if deployment == "ValidationFailed" then
  return {
    status = "Degraded",
    message = withDetail("KubeRay refused the RayJob", describe(status))
      .. " (KubeRay will not run it: fix the RayJob, then delete and re-create it)",
  }
end

if deployment == "Suspending" or deployment == "Suspended" then
  if deployment == "Suspended" and spec.suspend ~= true then
    return {
      status = "Progressing",
      message = "RayJob is resuming: spec.suspend is false, KubeRay will start it again",
    }
  end
  local queue = nil
  if type(obj.metadata) == "table" and type(obj.metadata.labels) == "table" then
    queue = nonEmpty(obj.metadata.labels["kueue.x-k8s.io/queue-name"])
  end
  local waits = "waiting to be admitted (e.g. by Kueue) or for spec.suspend to be set to false"
  if queue ~= nil then
    waits = "waiting for Kueue to admit it to LocalQueue " .. queue
  end
  local text = "RayJob is suspended (spec.suspend is true): " .. waits
  if deployment == "Suspending" then
    text = "RayJob is being suspended (spec.suspend is true), KubeRay is deleting its RayCluster; "
      .. waits
  end
  return {status = "Suspended", message = text}
end

if deployment == "Retrying" then
  local text = "RayJob attempt failed, KubeRay is retrying it"
  if failed ~= nil then
    text = "RayJob attempt " .. tostring(failed) .. " failed, KubeRay is retrying it (retry "
      .. tostring(failed)
    if type(spec.backoffLimit) == "number" then
      text = text .. " of " .. tostring(spec.backoffLimit)
    end
    text = text .. ")"
  end
  return {status = "Progressing", message = withDetail(text, describe(status))}
end

if deployment == "Initializing" then
  return {
    status = "Progressing",
    message = withDetail(
      "RayJob is initializing: KubeRay waits for " .. theCluster .. " to be ready" .. rayJob,
      describe(status)
    ),
  }
end

if deployment == "Waiting" then
  return {
    status = "Progressing",
    message = "RayJob is waiting for a Ray job to be submitted to " .. theCluster .. rayJob
      .. " (InteractiveMode: KubeRay follows it once spec.jobId is set)",
  }
end

local text = "RayJob is " .. deployment .. " on " .. theCluster .. rayJob
if deployment == "Running" then
  text = "RayJob is running on " .. theCluster .. rayJob
end
local checkFailing = nonEmpty(status.jobStatusCheckFailureStartTime)
if checkFailing ~= nil then
  text = text .. "; KubeRay has failed to read the job status from the Ray dashboard since "
    .. checkFailing
end
return {status = "Progressing", message = withDetail(text, describe(status))}
