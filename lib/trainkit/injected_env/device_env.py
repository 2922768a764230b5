"""The device variables the container runtime reads: no kind of job may set them."""

from __future__ import annotations

from .reserved_env import ReservedEnv

__all__ = ["DEVICES", "DEVICE_ENV"]

# Read by the container runtime when it creates the container, not by the
# training code: set by a job, they would expose GPUs the device plugin did not
# assign to the pod (NVIDIA_VISIBLE_DEVICES=all), or change driver features.
# nvidia-container-toolkit reads every NVIDIA_* variable of the image and pod
# (internal/config/image/cuda_image.go); the AMD and Habana runtimes theirs.
_DEVICE_RUNTIME = (
    "the container runtime reads it when it creates the container and would expose "
    "devices the scheduler did not assign to the pod; GPUs come from resources.gpu"
)
DEVICE_ENV: dict[str, str] = {
    "AMD_VISIBLE_DEVICES": _DEVICE_RUNTIME,
    "HABANA_VISIBLE_DEVICES": _DEVICE_RUNTIME,
    "HABANA_VISIBLE_MODULES": _DEVICE_RUNTIME,
    "ROCR_VISIBLE_DEVICES": "it selects the AMD GPUs of the node the ROCm runtime uses; "
    "the device plugin assigns them (resources.gpu)",
    "HIP_VISIBLE_DEVICES": "it selects the AMD GPUs of the node HIP uses; the device plugin "
    "assigns them (resources.gpu)",
    "GPU_DEVICE_ORDINAL": "it selects the AMD GPUs of the node the runtime uses; the device "
    "plugin assigns them (resources.gpu)",
    "CUDA_VISIBLE_DEVICES": "the device plugin assigns the GPUs of each pod (resources.gpu); "
    "procs_per_node decides how many processes use them",
}

DEVICES = ReservedEnv(kinds=(), names=DEVICE_ENV, prefixes={"NVIDIA_": _DEVICE_RUNTIME})
