"""Section 5's models, run configurations and training loop: shapes and parameter counts, the
paper's schedule, the noise the students see, clear errors, and reproducibility."""
from __future__ import annotations

import math

import pytest
import torch

from dsmlib.models.datasets import load_dataset
from dsmlib.models.networks import count_parameters
from dsmlib.models.run_config import RunConfig, student_of
from dsmlib.models.loop import build_model, lr_at, predict, train
from dsmlib.models.step import STREAM_NOISE, Member, execution, member_noise
from dsmlib.foundation.rng import as_torch_generator, child_seed
from dsmlib.theory.label_noise import swap_expectation_matrix

TIMING = ("train_s", "eval_s", "gradnorm_s")


def strip(history):
    return [{k: v for k, v in row.items() if k not in TIMING} for row in history]


def noise_model(cfg: RunConfig):
    """The noise model a student of ``cfg`` sees (as its step builds it)."""
    return member_noise(Member(cfg.noise, cfg.level))


def tiny(**kw) -> RunConfig:
    base = dict(dataset="digits", depth=8, epochs=2, train_limit=128, n_gradnorm=4)
    return RunConfig(**{**base, **kw})


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


def test_paper_schedule():
    c = tiny(epochs=200)
    assert [lr_at(c, e) for e in (0, 99, 100, 149, 150, 199)] == pytest.approx(
        [0.1, 0.1, 0.01, 0.01, 0.001, 0.001])


def test_config_key_and_roundtrip():
    t = tiny()
    s = student_of(t, "gaussian", 4, epochs=3)
    assert s.key() == RunConfig.from_dict(s.to_dict()).key()
    assert student_of(t, "none", 0).key() == student_of(t, "none", 0.0).key()
    assert len({tiny(seed=1).key(), tiny(lr=0.05).key(), tiny(epochs=3).key(), t.key(),
                s.key(), student_of(tiny(seed=1), "gaussian", 4, epochs=3).key()}) == 6
    assert s.split_seed == t.seed and "student-gaussian-4" in s.label()
    assert any("lr" in d for d in t.differences(tiny(lr=0.05)))


@pytest.mark.parametrize("kw, match", [
    (dict(dataset="imagenet"), "dataset must be one of"),
    (dict(depth=10), "depth must be of the form 6n"),
    (dict(depth=7), "depth must be of the form 6n"),
    (dict(depth=7.5), "depth must be an integer"),
    (dict(epochs=2.5), "epochs must be an integer"),
    (dict(epochs=0), "epochs must be >= 1"),
    (dict(batch_size=0), "batch_size must be >= 1"),
    (dict(precision="fp16"), "precision must be one of"),
    (dict(noise="gaussian", level=1.0), "a teacher has no teacher, no noise"),
    (dict(stream=1), "a teacher has no teacher, no noise and no student stream"),
    (dict(recipe=1), "recipe must be >= 2"),
    (dict(passes=0), "passes must be >= 1"),
    (dict(n_train_eval=0), "n_train_eval must be >= 1"),
    (dict(role="student"), "a student needs teacher"),
])
def test_bad_configurations(kw, match):
    with pytest.raises(ValueError, match=match):
        tiny(**kw)


@pytest.mark.parametrize("noise, level, match", [
    ("gaussian", -1.0, "sigma"), ("gaussian", 0.0, "sigma"), ("gaussian", 1e9, "sigma"),
    ("symmetric", 1.5, "swap probability"), ("symmetric", 0.0, "swap probability"),
    ("none", 0.5, "level must be 0"), ("uniform", 0.1, "noise must be one of")])
def test_noise_levels_out_of_range(noise, level, match):
    with pytest.raises(ValueError, match=match):
        student_of(tiny(), noise, level)


def test_student_must_match_teacher():
    with pytest.raises(ValueError, match="must match its teacher's depth"):
        RunConfig(depth=14, epochs=2, n_gradnorm=4, role="student", teacher=tiny())


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


def test_integral_floats_are_stored_as_integers():
    """2.0 epochs is 2 epochs (stored as an int: a float would break range() in training)."""
    c = tiny(epochs=2.0, n_gradnorm=4.0, train_limit=128.0)
    assert (c.epochs, c.n_gradnorm, c.train_limit) == (2, 4, 128)
    assert all(type(v) is int for v in (c.epochs, c.n_gradnorm, c.train_limit, c.depth))
    assert c.key() == tiny().key()


def test_train_bad_input():
    d = load_dataset("digits", train_limit=32, device="cpu")
    with pytest.raises(ValueError, match="batch_size must be <= the 32 training images"):
        train(tiny(), d)
    with pytest.raises(ValueError, match="n_gradnorm must be <= the 32 training images, got 33"):
        train(tiny(batch_size=16, n_gradnorm=33), d)
    with pytest.raises(ValueError, match="needs its trained teacher"):
        train(student_of(tiny(batch_size=16), "none", 0), d)


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
