"""ResNet-50 on the Flowers dataset with Paddle's collective fleet API.

Started by ``python -m paddle.distributed.launch`` on each Worker: the launcher reads the
rendezvous the Training Operator sets (PADDLE_MASTER, PADDLE_NNODES, PADDLE_JOB_ID) and
starts one trainer per visible GPU.
"""

from __future__ import annotations

import argparse

import paddle
import paddle.nn.functional as F
from paddle.distributed import fleet
from paddle.vision import transforms
from paddle.vision.datasets import Flowers
from paddle.vision.models import resnet50


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=32, help="per trainer")
    args = p.parse_args()

    fleet.init(is_collective=True)
    model = fleet.distributed_model(resnet50(num_classes=102))
    optimizer = fleet.distributed_optimizer(
        paddle.optimizer.Momentum(
            learning_rate=0.1, momentum=0.9, parameters=model.parameters()
        )
    )
    transform = transforms.Compose(
        [transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()]
    )
    data = Flowers(mode="train", transform=transform)
    sampler = paddle.io.DistributedBatchSampler(data, batch_size=args.batch_size, shuffle=True)
    loader = paddle.io.DataLoader(data, batch_sampler=sampler, num_workers=4)
    rank = paddle.distributed.get_rank()
    for epoch in range(args.epochs):
        for step, (image, label) in enumerate(loader):
            loss = F.cross_entropy(model(image), label.astype("int64").reshape([-1, 1]))
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            if rank == 0 and step % 50 == 0:
                print(f"epoch {epoch} step {step} loss {float(loss):.4f}", flush=True)


if __name__ == "__main__":
    main()
