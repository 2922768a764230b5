import trainkit


def test_all_is_pinned_and_sorted():
    assert trainkit.__all__ == [
        "ArgoCD",
        "Capacity",
        "Cluster",
        "ClusterTrainingRuntime",
        "DefinitionError",
        "ManifestError",
        "NetworkProfile",
        "Policy",
        "Problem",
        "PyTorchJob",
        "Queue",
        "RehearsalError",
        "Resources",
        "Script",
        "SetupError",
        "StaleOutputError",
        "Team",
        "Toleration",
        "TrainJob",
        "TrainingRuntime",
        "TrainkitError",
        "Volume",
    ]
    public = sorted(n for n in vars(trainkit) if not n.startswith("_") and n[0].isupper())
    assert public == trainkit.__all__


def test_every_user_error_shares_one_root():
    for name in trainkit.__all__:
        obj = getattr(trainkit, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, trainkit.TrainkitError)
