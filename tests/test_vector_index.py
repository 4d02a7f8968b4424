"""Vector index: exactness against numpy, approximate-index quality, names, persistence, Milvus parity."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kgrag_utils.errors import ConfigError, MissingDependencyError
from kgrag_utils.vector_index import FaissIndex, MilvusIndex, VectorIndex, faiss_gpu_available, make_index


def data(n=2000, d=32, m=25, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal((m, d)).astype(np.float32)


def brute_force(x, q, metric):
    """Reference scores (m, n): inner products, or squared Euclidean distances."""
    x64, q64 = x.astype(np.float64), q.astype(np.float64)
    if metric == "ip":
        return q64 @ x64.T
    return (q64**2).sum(1)[:, None] + (x64**2).sum(1)[None, :] - 2 * q64 @ x64.T


def reference_topk(x, q, metric, k):
    s = brute_force(x, q, metric)
    order = np.argsort(-s if metric == "ip" else s, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(s, order, axis=1), order


def assert_same_topk(ids, ref_ids, ref_scores_full, tol=1e-3):
    """Equal ids, except where two candidates' exact scores tie within tol."""
    for row, (got, want) in enumerate(zip(ids, ref_ids)):
        for a, b in zip(got, want):
            if a != b:
                assert abs(ref_scores_full[row, a] - ref_scores_full[row, b]) <= tol, (row, a, b)


def recall_vs(ids, ref_ids):
    k = ref_ids.shape[1]
    return np.mean([len(set(a) & set(b)) / k for a, b in zip(ids, ref_ids)])


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_faiss_flat_is_exact(metric):
    x, q = data()
    idx = make_index("faiss", dim=32, metric=metric, kind="flat", use_gpu=False)
    idx.add(x[:1200])
    idx.add(x[1200:])  # ids continue across adds
    assert len(idx) == 2000
    scores, ids = idx.search(q, 10)
    assert scores.dtype == np.float32 and ids.dtype == np.int64 and ids.shape == (25, 10)
    ref_scores, ref_ids = reference_topk(x, q, metric, 10)
    assert_same_topk(ids, ref_ids, brute_force(x, q, metric))
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_padding_when_k_exceeds_size(metric):
    x, q = data(n=3)
    idx = make_index("faiss", dim=32, metric=metric, use_gpu=False)
    empty_scores, empty_ids = idx.search(q[:2], 4)
    assert (empty_ids == -1).all()
    idx.add(x)
    scores, ids = idx.search(q[:2], 5)
    assert (ids[:, 3:] == -1).all() and (ids[:, :3] >= 0).all()
    assert np.isinf(scores[:, 3:]).all()
    assert sorted(ids[0, :3]) == [0, 1, 2]
    # a single query vector is accepted as (d,)
    assert idx.search(q[0], 2)[1].shape == (1, 2)


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_hnsw_recall_close_to_flat(metric):
    x, q = data(n=5000, d=64, m=200, seed=1)
    idx = make_index("faiss", dim=64, metric=metric, kind="hnsw", use_gpu=False)
    idx.add(x)
    _, ids = idx.search(q, 10)
    _, ref_ids = reference_topk(x, q, metric, 10)
    assert recall_vs(ids, ref_ids) >= 0.9


def test_ivf_recall_grows_with_nprobe_and_is_exact_when_probing_all_lists():
    x, q = data(n=5000, d=32, m=100, seed=2)
    _, ref_ids = reference_topk(x, q, "ip", 10)
    recalls = {}
    for nprobe in (32, 70):
        idx = make_index("faiss", dim=32, metric="ip", kind="ivf", use_gpu=False, nprobe=nprobe)
        idx.add(x)  # trained on this first add: about sqrt(n) lists
        assert idx.params["nlist"] == int(np.sqrt(5000)) == 70
        recalls[nprobe] = recall_vs(idx.search(q, 10)[1], ref_ids)
    default = make_index("faiss", dim=32, metric="ip", kind="ivf", use_gpu=False)
    default.add(x)
    assert default.params["nprobe"] == 18  # a quarter of the 70 lists
    assert recall_vs(default.search(q, 10)[1], ref_ids) <= recalls[32]
    assert recalls[32] >= 0.9  # random gaussians are the hard case for IVF
    assert recalls[70] == 1.0  # every list probed = exhaustive search


def test_names_of_maps_ids_and_drops_padding():
    x, _ = data(n=4)
    idx = make_index("faiss", dim=32, use_gpu=False)
    idx.add(x[:2], ["zero", "one"])
    idx.add(x[2:], ["two", "three"])
    assert idx.names_of(np.array([[3, 0, -1], [1, -1, -1]])) == [["three", "zero"], ["one"]]
    assert idx.names_of([2]) == [["two"]]
    _, ids = idx.search(x[[1]], 1)
    assert idx.names_of(ids) == [["one"]]  # a stored vector finds itself (inner product of gaussians)
    with pytest.raises(ConfigError):
        idx.names_of([[7]])


def test_names_must_be_consistent():
    x, _ = data(n=4)
    idx = make_index("faiss", dim=32, use_gpu=False)
    with pytest.raises(ConfigError):
        idx.add(x, ["only one"])
    idx.add(x[:2], ["a", "b"])
    with pytest.raises(ConfigError):
        idx.add(x[2:])
    bare = make_index("faiss", dim=32, use_gpu=False)
    bare.add(x)
    with pytest.raises(ConfigError):
        bare.names_of([[0]])


def test_bad_arguments_raise_config_errors():
    x, q = data(n=10)
    with pytest.raises(ConfigError):
        make_index("annoy", dim=32)
    with pytest.raises(ConfigError):
        make_index("faiss", dim=32, metric="cosine")
    with pytest.raises(ConfigError):
        make_index("faiss", dim=32, kind="lsh")
    with pytest.raises(ConfigError):
        make_index("faiss", dim=0)
    with pytest.raises(ConfigError):
        make_index("faiss", dim=32, uri="x.db")
    idx = make_index("faiss", dim=32, use_gpu=False)
    with pytest.raises(ConfigError):
        idx.add(np.zeros((3, 16), dtype=np.float32))
    bad = x.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ConfigError):
        idx.add(bad)
    idx.add(x)
    for k in (0, -1, 2.5, True):
        with pytest.raises(ConfigError):
            idx.search(q, k)


def test_gpu_request_without_gpu_faiss_is_a_one_line_error():
    if faiss_gpu_available():
        pytest.skip("this faiss has GPU support and sees a GPU")
    with pytest.raises(MissingDependencyError) as info:
        make_index("faiss", dim=8, use_gpu=True)
    assert "\n" not in str(info.value)
    assert make_index("faiss", dim=8, use_gpu="auto").on_gpu is False


@pytest.mark.skipif(not faiss_gpu_available(), reason="needs faiss with GPU support and a CUDA device")
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_faiss_gpu_flat_matches_cpu(metric, tmp_path):
    x, q = data()
    gpu = make_index("faiss", dim=32, metric=metric, use_gpu=True)
    assert gpu.on_gpu
    gpu.add(x)
    _, ids = gpu.search(q, 10)
    _, ref_ids = reference_topk(x, q, metric, 10)
    assert_same_topk(ids, ref_ids, brute_force(x, q, metric))
    restored = VectorIndex.load(gpu.save(tmp_path / "gpu"), use_gpu=False)
    np.testing.assert_array_equal(restored.search(q, 10)[1], ids)


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_faiss_save_load_round_trip(kind, tmp_path):
    x, q = data(n=3000)
    names = [f"entity {i}" for i in range(3000)]
    idx = make_index("faiss", dim=32, metric="ip", kind=kind, use_gpu=False, ef_search=64, nprobe=8)
    idx.add(x, names)
    scores, ids = idx.search(q, 7)
    folder = idx.save(tmp_path / f"idx-{kind}")
    manifest = json.loads((folder / "index.json").read_text())
    assert manifest["backend"] == "faiss" and manifest["n"] == 3000 and manifest["kind"] == kind
    back = VectorIndex.load(folder)
    assert isinstance(back, FaissIndex) and len(back) == 3000 and back.params == idx.params
    s2, i2 = back.search(q, 7)
    np.testing.assert_array_equal(i2, ids)
    np.testing.assert_allclose(s2, scores, rtol=1e-6)
    assert back.names_of(i2) == idx.names_of(ids)
    back.add(x[:1], ["again"])  # still usable: ids continue
    assert len(back) == 3001 and back.names_of([[3000]]) == [["again"]]


def test_load_missing_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError):
        VectorIndex.load(tmp_path / "nothing-here")


# ---- Milvus -------------------------------------------------------------------------------

def _milvus_available() -> str | None:
    try:
        import milvus_lite  # noqa: F401
        import pymilvus  # noqa: F401
    except ImportError as exc:
        return f"pymilvus + milvus-lite not installed ({exc}); `pip install -e '.[milvus]'`"
    return None


milvus = pytest.mark.skipif(_milvus_available() is not None, reason=str(_milvus_available()))


@pytest.fixture
def milvus_uri(tmp_path):
    return str(tmp_path / "milvus" / "test.db")


@milvus
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_milvus_flat_matches_faiss_flat(metric, milvus_uri):
    x, q = data(n=1500, m=30, seed=3)
    fa = make_index("faiss", dim=32, metric=metric, kind="flat", use_gpu=False)
    mi = make_index("milvus", dim=32, metric=metric, kind="flat", uri=milvus_uri, collection=f"parity_{metric}")
    try:
        for index in (fa, mi):
            index.add(x[:1000])
            index.add(x[1000:])
        assert len(mi) == 1500
        fs, fi = fa.search(q, 10)
        ms, mi_ids = mi.search(q, 10)
        assert mi_ids.dtype == np.int64 and ms.dtype == np.float32
        assert_same_topk(mi_ids, fi, brute_force(x, q, metric))
        np.testing.assert_allclose(ms, fs, rtol=1e-4, atol=1e-3)  # same score convention (squared L2 for "l2")
        # padding semantics match too
        small_f = make_index("faiss", dim=32, metric=metric, use_gpu=False)
        small_m = make_index("milvus", dim=32, metric=metric, uri=milvus_uri, collection=f"small_{metric}")
        small_f.add(x[:3])
        small_m.add(x[:3])
        sf, idf = small_f.search(q[:2], 5)
        sm, idm = small_m.search(q[:2], 5)
        np.testing.assert_array_equal(idm, idf)
        assert np.isinf(sm[:, 3:]).all() and np.isinf(sf[:, 3:]).all()
    finally:
        mi.close()


@milvus
def test_milvus_save_load_and_names(milvus_uri, tmp_path):
    x, q = data(n=500, seed=4)
    names = [f"n{i}" for i in range(500)]
    idx = make_index("milvus", dim=32, metric="ip", uri=milvus_uri, collection="roundtrip")
    assert isinstance(idx, MilvusIndex)
    idx.add(x, names)
    scores, ids = idx.search(q, 5)
    folder = idx.save(tmp_path / "milvus-idx")
    with pytest.raises(ConfigError):  # the collection exists: no silent overwrite
        make_index("milvus", dim=32, uri=milvus_uri, collection="roundtrip")
    back = VectorIndex.load(folder)
    assert isinstance(back, MilvusIndex) and len(back) == 500
    s2, i2 = back.search(q, 5)
    np.testing.assert_array_equal(i2, ids)
    np.testing.assert_allclose(s2, scores, rtol=1e-5)
    assert back.names_of(i2[:1]) == [[names[i] for i in ids[0]]]
    fresh = make_index("milvus", dim=32, uri=milvus_uri, collection="roundtrip", overwrite=True)
    assert len(fresh) == 0 and (fresh.search(q[:1], 3)[1] == -1).all()
    fresh.close()


@milvus
def test_milvus_rejects_bad_collection_name(milvus_uri):
    with pytest.raises(ConfigError):
        make_index("milvus", dim=8, uri=milvus_uri, collection="1-bad name")
    with pytest.raises(ConfigError):
        make_index("milvus", dim=8, uri=milvus_uri, use_gpu=True)
