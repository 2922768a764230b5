"""Train MobileNetV2 with TensorFlow's ParameterServerStrategy.

The Training Operator sets TF_CONFIG in every pod: workers and parameter servers run a
``tf.distribute.Server`` until the job ends, the chief coordinates the training and exits
when it is done, which ends the job (the TFJob succeeds when its chief exits 0).
"""

from __future__ import annotations

import argparse
import json
import os

import tensorflow as tf


def dataset(batch: int) -> tf.data.Dataset:
    images = tf.random.uniform((256, 96, 96, 3))
    labels = tf.random.uniform((256,), maxval=10, dtype=tf.int32)
    return tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(256).repeat().batch(batch)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps-per-epoch", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()
    task = json.loads(os.environ["TF_CONFIG"])["task"]
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if task["type"] in ("worker", "ps"):
        server = tf.distribute.Server(
            resolver.cluster_spec(),
            job_name=task["type"],
            task_index=task["index"],
            protocol=resolver.rpc_layer or "grpc",
            start=True,
        )
        server.join()
        return
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    with strategy.scope():
        model = tf.keras.applications.MobileNetV2(input_shape=(96, 96, 3), weights=None, classes=10)
        model.compile(
            optimizer="adam",
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
    model.fit(
        tf.keras.utils.experimental.DatasetCreator(lambda _: dataset(args.batch_size)),
        epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch,
    )
    print("chief: training done", flush=True)


if __name__ == "__main__":
    main()
