"""Section 5's training loop (dsmlib.models.sec5_distillation.loop and what it trains with:
trainer, targets, plan, nets, recipe): one step on small exact inputs, computed here by hand (the
losses of every noise kind, their scale, one backward pass, SGD's update), an epoch's sum of its
steps' losses, the networks' shapes and parameter counts, the paper's schedule, the noise the
students see, clear errors, and reproducibility."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from dsmlib.models.sec5_distillation.datasets import apply_augment, load_dataset
from dsmlib.models.sec5_distillation.device import device_policy, execution
from dsmlib.models.networks import count_parameters
from dsmlib.models.sec5_distillation.run_config import RunConfig, student_of
from dsmlib.models.sec5_distillation.group import Group
from dsmlib.models.sec5_distillation.loop import train
from dsmlib.models.sec5_distillation.measure import predict
from dsmlib.models.sec5_distillation.nets import build_model
from dsmlib.models.sec5_distillation.plan import plan_epoch, plan_lanes
from dsmlib.models.sec5_distillation.recipe import PAPER
from dsmlib.models.sec5_distillation.seeds import STREAM_NOISE
from dsmlib.models.sec5_distillation.targets import Member, member_noise
from dsmlib.models.sec5_distillation.trainer import Trainer
from dsmlib.foundation.rng import as_torch_generator, child_seed
from dsmlib.theory.label_noise import swap_expectation_matrix
from tiny_runs import tiny_teacher

TIMING = ("train_s", "eval_s", "gradnorm_s")


def strip(history):
    return [{k: v for k, v in row.items() if k not in TIMING} for row in history]


def noise_model(cfg: RunConfig):
    """The noise model a student of ``cfg`` sees (as its step builds it)."""
    return member_noise(Member(cfg.noise, cfg.level))


def tiny(**kw) -> RunConfig:
    """The tiny teacher on 128 images, batch 64."""
    return tiny_teacher(**{"train_limit": 128, "batch_size": 64, **kw})


KINDS = [("none", 0.0), ("gaussian", 4.0), ("symmetric", 0.3), ("symmetric_mean", 0.3),
         ("hinton", 2.0)]
LR, MOMENTUM, DECAY = 0.05, PAPER.momentum, 0.01   # a decay large enough for its term to show


def _linear_trainer(students: bool) -> Trainer:
    """A float64 trainer of the tiny teacher, or of its students of every kind, whose networks
    are linear maps of the flattened 8x8 image (the members' ``(K L, 64)`` matrix, the
    teacher's ``(L, 64)``), so that its steps can be computed here by hand."""
    data = load_dataset("digits", train_limit=96, device="cpu")
    t = tiny_teacher(precision="fp64", lr=LR, momentum=MOMENTUM, weight_decay=DECAY)
    configs = [student_of(t, k, lv) for k, lv in KINDS] if students else [t]
    gen = torch.Generator().manual_seed(3)

    def linear(rows: int) -> torch.nn.Module:
        net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, rows, bias=False))
        with torch.no_grad():
            net[1].weight.copy_(0.3 * torch.randn(rows, 64, generator=gen, dtype=torch.float64))
        return net.double()
    group = Group.of(configs, data, device_policy("fp64", torch.device("cpu"), "eager"))
    resnet = [build_model(t, data, policy=group.policy).eval()] if students else []
    trainer = Trainer(group, resnet)
    trainer.teacher = linear(10).eval() if students else None
    trainer.model = linear(10 * len(configs))
    trainer.opt = torch.optim.SGD(trainer.model.parameters(), lr=LR, momentum=MOMENTUM,
                                  weight_decay=DECAY)
    return trainer


def _losses_by_hand(trainer: Trainer, W: torch.Tensor, batch) -> torch.Tensor:
    """Every member's loss from its definition: the quadratic loss per logit against the
    teacher's logits ``t`` plus its noise -- ``t + sigma z``, ``t`` with each logit copied from
    the ``r``-th other one where ``u < p``, the swap's mean ``M_p t`` (Eq. 24) -- or Hinton's
    ``T^2 KL`` of the softened softmaxes; a teacher's cross-entropy on the labels."""
    X, y = trainer.X[0], trainer.y[0]      # the group's one lane
    x = apply_augment(X[batch.idx], batch.dy, batch.dx, batch.flips, pad=trainer.pad)
    f = x.flatten(1).double() @ W.T
    if trainer.teacher is None:
        return -F.log_softmax(f, -1).gather(1, y[batch.idx, None]).mean().reshape(1)
    t = x.flatten(1).double() @ trainer.teacher[1].weight.T
    f, L = f.view(x.shape[0], len(KINDS), -1), t.shape[1]
    out = []
    for k, (kind, level) in enumerate(KINDS):
        if kind == "hinton":
            p, log_q = torch.softmax(t / level, -1), torch.log_softmax(f[:, k] / level, -1)
            out.append(level ** 2 * (p * (p.log() - log_q)).sum(-1).mean())
            continue
        if kind == "gaussian":
            target = t + math.sqrt(level) * batch.gauss
        elif kind == "symmetric":
            r, others = batch.swap_r, torch.arange(L)
            target = t.gather(1, torch.where(batch.swap_u < level, r + (r >= others).long(),
                                             others))
        elif kind == "symmetric_mean":
            target = t @ swap_expectation_matrix(L, level).T.double()
        else:
            target = t
        out.append(((f[:, k] - target) ** 2).mean())
    return torch.stack(out)


@pytest.mark.parametrize("students", [False, True])
def test_a_step_is_sgd_on_the_members_losses_and_an_epoch_sums_them(students):
    """Each step's losses are the members' losses by their definitions, and the step moves the
    weights as SGD with momentum and weight decay on their sum (one backward pass, each member
    seeing only its own loss's gradient); an epoch returns its steps' summed losses. Float64 on
    exact small inputs (rel 1e-10: rounding only). Mutants that fail it: the Gaussian noise term
    dropped, the loss summed over the logits instead of averaged, the members' losses averaged
    instead of summed before the backward pass, Hinton's ``T^2`` dropped, the gradients not
    zeroed between steps, an epoch that keeps only its last step's losses."""
    trainer = _linear_trainer(students)
    plan = plan_epoch(7, 0, n=96, batch_size=32, device=torch.device("cpu"), pad=trainer.pad,
                      flip=True, augment=True, num_classes=10, dtype=torch.float64,
                      kinds={m.kind for m in trainer.members})
    lane = plan_lanes([plan])     # the plan of a group of one lane (a lane axis of one)
    W = trainer.model[1].weight.detach().clone()
    buf, total = torch.zeros_like(W), torch.zeros(len(trainer.members), dtype=torch.float64)
    trainer.model.train()
    for s in range(plan.steps):
        Wg = W.clone().requires_grad_(True)
        want = _losses_by_hand(trainer, Wg, plan.batch(s))
        (grad,) = torch.autograd.grad(want.sum(), Wg)
        buf = (grad + DECAY * W) if s == 0 else MOMENTUM * buf + grad + DECAY * W
        W = W - LR * buf
        total += want.detach()
        got = trainer.step(lane.batch(s))
        torch.testing.assert_close(got, want.detach(), rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(trainer.model[1].weight.detach(), W, rtol=1e-10, atol=1e-12)
    again = _linear_trainer(students)
    torch.testing.assert_close(again.epoch(lane), total, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(again.model[1].weight.detach(), W, rtol=1e-10, atol=1e-12)


def test_models_shapes_and_parameter_counts(device):
    d = load_dataset("digits", train_limit=16, device=device)
    m = build_model(tiny(depth=56), d)
    assert count_parameters(m) == 853_018 - 2 * 16 * 9   # ResNet-56, 1 input channel
    assert predict(m.eval(), d.X_val[:5], amp=False).shape == (5, 10)
    up = load_dataset("digits", image_size=32, train_limit=16, device=device)
    assert predict(build_model(tiny(), up).eval(), up.X_val[:3], amp=False).shape == (3, 10)
    # the paper's network: ResNet-56 on 3x32x32 CIFAR images, about 0.85 M parameters
    from dsmlib.models.networks import cifar_resnet
    assert abs(count_parameters(cifar_resnet(56, 10)) - 0.85e6) < 0.01e6
    assert count_parameters(cifar_resnet(56, 100)) == 853_018 + 64 * 90 + 90


def test_the_papers_schedule_drops_at_its_fractions_of_the_epochs():
    """The paper's schedule (:data:`PAPER`; Section 5: divided by 10 at epochs 100 and 150 of
    200): its rate starts at ``lr`` and drops by its factor at each of its fractions of its
    epochs, and nowhere else."""
    lrs = [PAPER.lr_at(e) for e in range(PAPER.epochs)]
    drops = [e for e in range(1, PAPER.epochs) if lrs[e] != lrs[e - 1]]
    assert drops == [round(f * PAPER.epochs) for f in PAPER.lr_drops] and lrs[0] == PAPER.lr
    assert all(lrs[e] == pytest.approx(lrs[e - 1] * PAPER.lr_drop_factor) for e in drops)


@pytest.mark.parametrize("epochs", [1, 2, 3, 5, 7, 10, 12, 13, 200])
def test_the_schedule_of_recipe_2_is_the_one_it_had_in_code(epochs):
    """At its implied values the schedule's fields give, bit for bit, the learning rates the
    drops hard-coded in the loop's lr_at gave (epochs // 2 and 3 * epochs // 4), so runs of
    recipe 2 train as they did."""
    c = tiny(epochs=epochs)
    old = [c.lr * 0.1 ** ((e >= epochs // 2) + (e >= (3 * epochs) // 4)) for e in range(epochs)]
    assert [c.lr_at(e) for e in range(epochs)] == old


def test_a_schedule_of_other_drops_and_factor():
    """Drops at the decimals written (0.3 of 10 epochs is epoch 3, not 2 by rounding)."""
    c = tiny(epochs=10, lr=1.0, lr_drops=[0.3, 0.7, 0.9], lr_drop_factor=0.5)
    assert [c.lr_at(e) for e in range(10)] == [1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25, 0.125]
    late = tiny(epochs=4, lr_drops=[1.0])
    assert [late.lr_at(e) for e in range(4)] == [late.lr] * 4


def _teacher_logits(n: int, L: int, device) -> torch.Tensor:
    g = torch.Generator().manual_seed(5)
    return (3 * torch.randn(n, L, generator=g)).to(device)


def test_gaussian_noise_as_the_students_see_it(device):
    """The targets a Gaussian student regresses on, drawn as the loop draws them: per-logit
    mean 0 and variance sigma^2 around the teacher's logits (n = 256,000 residuals; mean within
    5 SE, variance within 5 SE of a normal sample variance; false failure ~1e-6); fresh at every
    draw, and the same standard normals at every level (common random numbers)."""
    y = _teacher_logits(25_600, 10, device)
    cfg = student_of(tiny(), "gaussian", 4.0)
    g = as_torch_generator(child_seed(cfg.seed, STREAM_NOISE, 0), device)
    r = (noise_model(cfg).draw(y, g) - y).double()
    n = r.numel()
    assert abs(float(r.mean())) < 5 * 2.0 / math.sqrt(n)
    assert abs(float(r.var()) - 4.0) < 5 * 4.0 * math.sqrt(2 / (n - 1))
    assert not torch.equal(noise_model(cfg).draw(y, g), noise_model(cfg).draw(y, g))
    g1 = as_torch_generator(child_seed(0, STREAM_NOISE, 0), device)
    g2 = as_torch_generator(child_seed(0, STREAM_NOISE, 0), device)
    r1 = noise_model(student_of(tiny(), "gaussian", 1.0)).draw(y, g1) - y
    r9 = noise_model(student_of(tiny(), "gaussian", 9.0)).draw(y, g2) - y
    assert torch.allclose(3 * r1, r9, atol=1e-4)


def test_symmetric_noise_as_the_students_see_it(device):
    """The swap students use the 'copy' variant: every logit keeps its value with probability
    1 - p and otherwise copies another logit; the mean over draws is the paper's
    E[y~] = M y (each of the 10 coordinate means within 5 SE of it, SE from the closed-form
    variance; Bonferroni false failure < 1e-5), and the fraction changed is p (5 binomial SE)."""
    p, draws = 0.3, 2000
    y = _teacher_logits(1, 10, device).expand(draws, 10).contiguous()
    cfg = student_of(tiny(), "symmetric", p)
    noise = noise_model(cfg)
    assert noise.variant == "copy"
    ty = noise.draw(y, as_torch_generator(7, device)).double()
    changed = float((ty != y.double()).double().mean())
    assert abs(changed - p) < 5 * math.sqrt(p * (1 - p) / y.numel())
    expected = y[0].double() @ swap_expectation_matrix(10, p).to(device).T
    sd = noise.covariance(y[:1].double())[0].diagonal().sqrt()
    z = (ty.mean(0) - expected) / (sd / math.sqrt(draws))
    assert float(z.abs().max()) < 5


def test_training_is_reproducible_and_measures_every_epoch(device):
    d = load_dataset("digits", train_limit=128, device=device)
    with execution(deterministic=True):
        h1 = train(tiny(), d)
        h2 = train(tiny(), d)
    assert strip(h1) == strip(h2) and len(h1) == 3 and h1[0]["epoch"] == 0
    row = h1[-1]
    assert h1[0]["train_objective"] is None            # nothing trained yet
    for k in ("train_loss", "val_loss", "val_acc", "test_acc", "gradnorm", "gradnorm_se",
              "train_objective", "loss_scale", *TIMING):
        assert math.isfinite(row[k]), k
    assert row["gradnorm_se"] > 0 and row["loss_scale"] == pytest.approx(math.log(10))


def test_train_bad_input():
    d = load_dataset("digits", train_limit=32, device="cpu")
    with pytest.raises(ValueError, match="batch_size must be <= the 32 training images"):
        train(tiny(), d)
    with pytest.raises(ValueError, match="n_gradnorm must be <= the 32 training images, got 33"):
        train(tiny(batch_size=16, n_gradnorm=33), d)
    with pytest.raises(ValueError, match="needs its trained teacher"):
        train(student_of(tiny(batch_size=16), "none", 0), d)
    with pytest.raises(ValueError, match=r"step='compiled' runs on a trainer kept for reuse: "
                                         r"pass trainers=dsmlib.models.sec5_distillation.graph.Trainers\(\)"):
        train(tiny(batch_size=16), d, step="compiled")


def test_students_targets_and_loss_scale_before_training():
    """Before the first step a student is its teacher, so its train loss is the distance from
    the teacher's logits t to its own noiseless target: 0 for the noiseless and Gaussian
    students (E[y~] = t), and mean((M_p t - t)^2) for the swap and its control (Eq. 24, M_p
    from swap_expectation_matrix, not from the code under test); ``loss_scale``, the loss of
    predicting the mean target, is the variance of that target over the training images."""
    data = load_dataset("digits", train_limit=96, device="cpu")
    teacher_cfg = tiny(precision="fp64", train_limit=96)
    teacher = build_model(teacher_cfg, data).eval()          # an untrained teacher will do
    p = 0.3
    with torch.no_grad():
        t = predict(teacher, data.X_train, amp=False, dtype=torch.float64)
    mean_target = {"none": t, "gaussian": t,
                   "symmetric": t @ swap_expectation_matrix(10, p).T.to(t.dtype),
                   "symmetric_mean": t @ swap_expectation_matrix(10, p).T.to(t.dtype)}
    for kind, level in (("none", 0.0), ("gaussian", 4.0), ("symmetric", p),
                        ("symmetric_mean", p)):
        row = train(student_of(teacher_cfg, kind, level), data, teacher=teacher,
                    stop_after=0)[0]
        target = mean_target[kind]
        assert row["train_loss"] == pytest.approx(float(((target - t) ** 2).mean()),
                                                  rel=1e-9, abs=1e-12), kind
        assert row["loss_scale"] == pytest.approx(
            float(((target - target.mean(0)) ** 2).mean()), rel=1e-9), kind
    assert float(((mean_target["symmetric"] - t) ** 2).mean()) > 0
