import trainkit


def test_all_is_pinned_and_sorted():
    assert trainkit.__all__ == [
        "AdmissionCheckRule",
        "ArgoCD",
        "Capacity",
        "Cluster",
        "ClusterQueue",
        "ClusterTrainingRuntime",
        "ConfigMapEnv",
        "ConfigMapKey",
        "ConfigMapVolume",
        "ContainerSecurityContext",
        "CsiVolume",
        "DataSource",
        "DefinitionError",
        "DeletionRule",
        "Elastic",
        "EmptyDir",
        "ExternalMetric",
        "FlavorQuota",
        "HeadService",
        "Hook",
        "HostDevice",
        "HostPath",
        "InitContainer",
        "Initializer",
        "JAXJob",
        "KueueTopology",
        "MPIJob",
        "ManifestError",
        "ModelError",
        "NetworkProfile",
        "NodeLabel",
        "ObjectMetric",
        "PaddleJob",
        "PatchOp",
        "PlatformPatch",
        "PodAffinity",
        "PodField",
        "PodsMetric",
        "Policy",
        "Probe",
        "Problem",
        "PyTorchJob",
        "Queue",
        "RayCluster",
        "RayJob",
        "RayStart",
        "RehearsalError",
        "ResourceField",
        "ResourceFlavor",
        "ResourceMetric",
        "Resources",
        "Role",
        "RuntimeEnv",
        "RuntimeFlux",
        "RuntimeInitializers",
        "RuntimeMPI",
        "Script",
        "SecretEnv",
        "SecretKey",
        "SecretVolume",
        "SecurityContext",
        "ServiceAccountToken",
        "SetupError",
        "StaleOutputError",
        "TFJob",
        "Team",
        "Toleration",
        "Topology",
        "TrainJob",
        "TrainingRuntime",
        "TrainkitError",
        "Volume",
        "WorkerGroup",
        "WorkloadPriorityClass",
        "XGBoostJob",
        "__version__",
    ]
    public = sorted(n for n in dir(trainkit) if not n.startswith("_") and n[0].isupper())
    assert [*public, "__version__"] == trainkit.__all__
    for name in trainkit.__all__:
        assert getattr(trainkit, name) is not None


def test_version_is_one_string():
    from importlib.metadata import version

    assert trainkit.__version__ == version("trainkit-gitops")


def test_importing_trainkit_loads_no_model_until_one_is_used():
    import subprocess
    import sys

    code = "import sys, trainkit; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_user_error_shares_one_root():
    for name in trainkit.__all__:
        obj = getattr(trainkit, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, trainkit.TrainkitError)
