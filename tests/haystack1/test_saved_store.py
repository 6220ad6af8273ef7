"""Saves that survive a kill and a full disk, loads from anywhere, and no stale index served.

A child process saves a pipeline over and over and is killed (SIGKILL) at random points (four seeds); a child
whose file-size limit is below the index size fails mid-save (both forked: tests/support/forking.py). Either
way the previous save loads from another working directory and answers exactly as before. Files of two
different saves are refused with an error that says which file and what to do.
"""

import gc
import os
import random
import resource
import shutil
import signal
import stat
import time
from pathlib import Path

import pytest
from forking import exit_code, forked
from haystack import Pipeline
from haystack.document_stores import FAISSDocumentStore
from haystack.errors import PipelineConfigError
from haystack.schema import Document
from test_store_consistency import make_store, write

from haystack_dcsr import DCSRRetriever, load_faiss_store, load_pipeline, save_faiss_store, save_pipeline
from haystack_dcsr.core.storage.checksums import DamagedFileError
from haystack_dcsr.haystack1 import pipelines

QUESTIONS = ["Who discovered penicillin?", "Which wall divided Berlin?", "What is the largest planet?"]


def answers(pipeline_or_retriever):
    if isinstance(pipeline_or_retriever, Pipeline):
        run = pipeline_or_retriever.run_batch(queries=QUESTIONS, params={"Retriever": {"top_k": 5}})
        results = run["documents"]
    else:
        results = pipeline_or_retriever.retrieve_batch(QUESTIONS, top_k=5)
    return [[(doc.id, round(doc.score, 5)) for doc in docs] for docs in results]


@pytest.fixture
def saved(tmp_path, tiny_bert, corpus):
    """A query pipeline over a FAISS store on a SQLite file, saved once; returns (yaml, answers)."""
    store = make_store("faiss-flat", tmp_path, "live")
    retriever = DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False, top_n_sentences=500)
    write(store, corpus)
    store.update_embeddings(retriever)
    pipeline = Pipeline()
    pipeline.add_node(retriever, name="Retriever", inputs=["Query"])
    path = save_pipeline(pipeline, tmp_path / "saved" / "query.yml")
    return path, answers(pipeline)


def test_a_save_killed_at_random_points_leaves_the_previous_save_loadable(saved, tmp_path, monkeypatch):
    path, expected = saved
    monkeypatch.setattr(pipelines, "SUPERSEDED_GRACE_S", 0.0)  # (the forked saver inherits it)

    def save_forever(out):
        pipeline = load_pipeline(path)
        print("SAVING", file=out)
        while True:
            save_pipeline(pipeline, path)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for seed in range(4):
        gc.collect()  # the pipeline loaded last round is gone, and its database working copy with it
        pid, out = forked(save_forever, tmp_path)
        assert out.readline().strip() == "SAVING"
        time.sleep(random.Random(seed).uniform(0.0, 1.0))
        os.kill(pid, signal.SIGKILL)
        assert exit_code(pid) == -signal.SIGKILL  # killed mid-save, not ended on its own
        out.close()
        monkeypatch.chdir(elsewhere)  # and load from another working directory
        assert answers(load_pipeline(path, pipeline_name="query")) == expected, f"seed {seed}"
    generations = list((path.parent / "query.files").iterdir())
    # the current one, the one before it, one the last kill cut short, and the one the last saver loaded (its
    # working copy kept it while the saver ran)
    assert 1 <= len(generations) <= 4


def test_a_full_disk_during_a_save_leaves_the_previous_save_whole(saved, tmp_path):
    path, expected = saved
    index_size = next((path.parent / "query.files").glob("*/Retriever*.faiss"), None) or next(
        (path.parent / "query.files").glob("*/*.faiss")
    )
    limit = index_size.stat().st_size // 2

    def save_on_a_full_disk(out):
        pipeline = load_pipeline(path)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        try:
            save_pipeline(pipeline, path)
        except OSError as error:
            print("FAILED", error, file=out)

    pid, out = forked(save_on_a_full_disk, tmp_path)
    text = out.read()
    assert exit_code(pid) == 0
    assert "FAILED" in text and ("File too large" in text or "is the disk full" in text), text
    files = [p.name for p in path.parent.rglob("*")]
    assert not any(".tmp-" in name for name in files), files
    assert len(list((path.parent / "query.files").iterdir())) == 1  # the failed generation was removed
    assert answers(load_pipeline(path, pipeline_name="query")) == expected


def test_an_older_index_file_beside_a_newer_database_and_map_is_refused(tmp_path, tiny_bert, corpus):
    store = make_store("faiss-flat", tmp_path, "live")
    retriever = DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False, top_n_sentences=500)
    write(store, corpus)
    store.update_embeddings(retriever)
    save_faiss_store(store, tmp_path / "old" / "index.faiss")
    # the same passage ids and sentence counts with other text: same SQL shape, other vectors
    write(store, [Document(d.content.replace(".", "!"), id=d.id, meta=d.meta) for d in corpus])
    store.update_embeddings(retriever)
    save_faiss_store(store, tmp_path / "new" / "index.faiss")
    right = answers(
        DCSRRetriever(
            document_store=load_faiss_store(tmp_path / "new" / "index.faiss"),
            query_model=tiny_bert,
            progress_bar=False,
            top_n_sentences=500,
        )
    )
    assert right == answers(retriever)
    original = (tmp_path / "new" / "index.faiss").read_bytes()
    shutil.copy(tmp_path / "old" / "index.faiss", tmp_path / "new" / "index.faiss")
    with pytest.raises(DamagedFileError, match=r"new/index\.faiss: damaged: its SHA-256 differs"):
        load_faiss_store(tmp_path / "new" / "index.faiss")  # refused at load, by the checksum saved with it
    (tmp_path / "new" / "index.faiss").write_bytes(original)  # whole again
    shutil.copy(tmp_path / "old" / "index.faiss.dcsr-map.npz", tmp_path / "new" / "index.faiss.dcsr-map.npz")
    mixed = load_faiss_store(tmp_path / "new" / "index.faiss")  # a map from another save: a cache, never used
    reader = DCSRRetriever(document_store=mixed, query_model=tiny_bert, progress_bar=False, top_n_sentences=500)
    assert answers(reader) == right


def test_a_cut_short_index_file_is_named_with_what_to_do(saved, tmp_path):
    path, _ = saved
    index = next((path.parent / "query.files").glob("*/*.faiss"))
    data = index.read_bytes()
    index.write_bytes(data[: len(data) // 2])
    with pytest.raises(PipelineConfigError, match=r"\.faiss: damaged: its SHA-256 differs .* truncated or altered"):
        load_pipeline(path)
    with pytest.raises(DamagedFileError, match="truncated or altered since"):
        load_faiss_store(index)
    index.unlink()
    with pytest.raises(PipelineConfigError, match="is missing: the saved FAISS store is incomplete"):
        load_pipeline(path)


def test_a_cut_short_vector_map_is_ignored_with_a_warning_not_an_error_on_every_query(saved, caplog):
    path, expected = saved
    vector_map = next((path.parent / "query.files").glob("*/*.dcsr-map.npz"))
    data = vector_map.read_bytes()
    vector_map.write_bytes(data[: len(data) // 3])
    pipeline = load_pipeline(path, pipeline_name="query")
    assert answers(pipeline) == expected
    assert "Ignoring the vector map" in caplog.text


def test_an_in_memory_database_is_saved_with_the_index_and_loads_elsewhere(tmp_path, tiny_bert, corpus, monkeypatch):
    store = FAISSDocumentStore(sql_url="sqlite://", embedding_dim=32, progress_bar=False)
    retriever = DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False, top_n_sentences=500)
    write(store, corpus)
    store.update_embeddings(retriever)
    expected = answers(retriever)
    save_faiss_store(store, tmp_path / "saved" / "index.faiss")
    monkeypatch.chdir(tmp_path / "saved")
    loaded = load_faiss_store("index.faiss")
    assert loaded.get_document_count() == store.get_document_count() == 15
    again = DCSRRetriever(document_store=loaded, query_model=tiny_bert, progress_bar=False, top_n_sentences=500)
    assert answers(again) == expected


def test_loaders_get_a_whole_save_while_another_process_saves_in_a_loop(saved, tmp_path):
    """One process re-saves the pipeline as fast as it can; two others load the same YAML again and again: every
    load succeeds (the previous save or the new one) and answers as saved."""
    path, expected = saved

    def save_forever(out):
        pipeline = load_pipeline(path)
        print("SAVING", file=out)
        while True:
            save_pipeline(pipeline, path)

    def load_repeatedly(out):
        for _ in range(12):
            try:
                ok = answers(load_pipeline(path, pipeline_name="query")) == expected
                print("OK" if ok else "WRONG", file=out)
            except Exception as error:  # noqa: BLE001 - reported to the test
                print("ERROR", type(error).__name__, str(error)[:300], file=out)

    saver, saver_out = forked(save_forever, tmp_path)
    assert saver_out.readline().strip() == "SAVING"
    try:
        loaders = [forked(load_repeatedly, tmp_path) for _ in range(2)]
        results = [line.strip() for _, out in loaders for line in out.read().splitlines()]
        assert [exit_code(pid) for pid, _ in loaders] == [0, 0]
    finally:
        os.kill(saver, signal.SIGKILL)
        exit_code(saver)
    assert len(results) == 24 and set(results) == {"OK"}, [r for r in results if r != "OK"][:3]
    assert len(list((path.parent / "query.files").iterdir())) > 2  # it did save over them, many times


def test_two_processes_saving_to_one_yaml_take_turns(tmp_path, tiny_bert, corpus):
    """Each of two processes saves its own store to the same YAML path, again and again at once: the saves take
    turns (a lock file), so the final YAML loads and answers as one of the two pipelines, whole."""

    def pipeline_over(passages, name):
        store = make_store("faiss-flat", tmp_path, name)
        retriever = DCSRRetriever(document_store=store, query_model=tiny_bert, progress_bar=False, top_n_sentences=500)
        write(store, passages)
        store.update_embeddings(retriever)
        pipeline = Pipeline()
        pipeline.add_node(retriever, name="Retriever", inputs=["Query"])
        return pipeline

    pipelines_ = [pipeline_over(corpus[:3], "first"), pipeline_over(corpus[2:], "second")]
    expected = [answers(p) for p in pipelines_]
    path = tmp_path / "shared" / "query.yml"

    def save_often(pipeline):
        def work(out):
            for _ in range(6):
                save_pipeline(pipeline, path)
            print("SAVED", file=out)

        return work

    children = [forked(save_often(p), tmp_path) for p in pipelines_]
    assert [out.read().strip() for _, out in children] == ["SAVED", "SAVED"]
    assert [exit_code(pid) for pid, _ in children] == [0, 0]
    assert answers(load_pipeline(path, pipeline_name="query")) in expected
    assert not any(".tmp-" in p.name for p in path.parent.rglob("*"))


def test_a_save_waits_while_another_process_saves_to_the_same_yaml(saved, tmp_path):
    """Saves to one YAML path take turns (``<yaml>.lock``): while one process is held in the middle of its save
    (its generation written, its YAML not yet), a second process's save to the same path starts nothing (no
    generation of its own) and ends only after the first one."""
    path, _ = saved

    def held_save(out):
        real = pipelines._save_pipeline

        def pausing(*args, **kwargs):
            import haystack_dcsr.core.storage.atomic_files as atomic_files

            write_text = atomic_files.atomic_write_text

            def hold_then_write(target, *a, **k):
                if Path(target) == path:  # the YAML, written last
                    print("HELD", flush=True, file=out)
                    time.sleep(4)
                return write_text(target, *a, **k)

            atomic_files.atomic_write_text = hold_then_write
            return real(*args, **kwargs)

        pipelines._save_pipeline = pausing
        save_pipeline(load_pipeline(path), path)
        print("FIRST SAVED", time.monotonic(), file=out)

    def second_save(out):
        pipeline = load_pipeline(path)
        print("READY", file=out)
        save_pipeline(pipeline, path)
        print("SECOND SAVED", time.monotonic(), file=out)

    generations = _generations(path)
    first, first_out = forked(held_save, tmp_path)
    assert first_out.readline().strip() == "HELD"
    second, second_out = forked(second_save, tmp_path)
    assert second_out.readline().strip() == "READY"
    time.sleep(1.5)
    assert len(_generations(path)) == len(generations) + 1  # the first's only: the second waits for the lock
    first_done = first_out.readline().split()
    second_done = second_out.readline().split()
    assert [exit_code(first), exit_code(second)] == [0, 0]
    assert first_done[:2] == ["FIRST", "SAVED"] and second_done[:2] == ["SECOND", "SAVED"]
    assert float(second_done[2]) > float(first_done[2])


def test_a_load_reads_the_yaml_again_when_a_save_removed_the_generation_it_named(saved, monkeypatch):
    """Between reading the YAML and opening the stores it names, two saves (no grace period) remove the generation
    that YAML named: the load reads the newer YAML and answers as saved."""
    path, expected = saved
    monkeypatch.setattr(pipelines, "SUPERSEDED_GRACE_S", 0.0)
    (named,) = _generations(path)
    resolve = pipelines.resolve_saved_stores
    calls = []

    def saves_in_between(config, base):
        calls.append(config["components"])
        if len(calls) == 1:
            for _ in range(2):
                save_pipeline(load_pipeline(path), path)
            assert named not in _generations(path)
        return resolve(config, base)

    monkeypatch.setattr(pipelines, "resolve_saved_stores", saves_in_between)
    assert answers(load_pipeline(path, pipeline_name="query")) == expected
    assert len(calls) >= 2 and calls[0] != calls[-1]  # read again, naming a newer generation


def _save_in_child(path, hook):
    """Fork a child that installs ``hook`` (on ``os``) and saves the pipeline over ``path``; returns (pid, out)."""

    def work(out):
        hook(out)
        save_pipeline(load_pipeline(path), path)
        print("SAVED", file=out)

    return forked(work, path.parent.parent)


def test_a_save_killed_before_and_after_each_file_it_renames_leaves_a_loadable_save(saved, monkeypatch):
    """Every file of a save (the index, its config and checksums, the database copy, the vector map, the YAML
    last) is written under a temporary name and renamed into place: the child is killed just before and just
    after each rename in turn, and each time the YAML loads and answers as saved."""
    path, expected = saved
    monkeypatch.setattr(pipelines, "SUPERSEDED_GRACE_S", 0.0)
    real_replace = os.replace

    def recording(out):
        def replace(source, target):
            print("RENAMED", target, file=out)
            return real_replace(source, target)

        os.replace = replace

    pid, out = _save_in_child(path, recording)
    lines = out.read().splitlines()
    assert exit_code(pid) == 0 and lines[-1] == "SAVED"
    renamed = [Path(line.split(" ", 1)[1]) for line in lines if line.startswith("RENAMED")]
    generation = renamed[0].parent
    assert renamed[-1] == path  # the YAML, last
    assert {p for p in generation.iterdir()} == set(renamed[:-1])  # every file of the save was renamed into place
    for point in range(len(renamed)):
        for after in (False, True):

            def killing(out, point=point, after=after):
                calls = []

                def replace(source, target):
                    calls.append(target)
                    if len(calls) == point + 1 and not after:
                        os.kill(os.getpid(), signal.SIGKILL)
                    real_replace(source, target)
                    if len(calls) == point + 1 and after:
                        os.kill(os.getpid(), signal.SIGKILL)

                os.replace = replace

            pid, out = _save_in_child(path, killing)
            assert exit_code(pid) == -signal.SIGKILL, out.read()
            out.close()
            assert answers(load_pipeline(path, pipeline_name="query")) == expected, (point, after)


def test_a_full_disk_at_each_file_of_a_save_leaves_the_previous_save_whole(saved):
    """Each file flush (``fsync``) of a save fails in turn with ENOSPC, as a full disk makes it: the save raises,
    leaves no temporary file, and the previous save loads and answers."""
    import errno

    path, expected = saved
    real_fsync = os.fsync

    def counting(out):
        def fsync(fd):
            if not stat.S_ISDIR(os.fstat(fd).st_mode):  # a file's flush (a folder's is best effort)
                print("FSYNC", file=out)
            return real_fsync(fd)

        os.fsync = fsync

    pid, out = _save_in_child(path, counting)
    flushes = out.read().count("FSYNC")
    assert exit_code(pid) == 0 and flushes >= 6
    before = answers(load_pipeline(path, pipeline_name="query"))
    for point in range(flushes):

        def failing(out, point=point):
            calls = []

            def fsync(fd):
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    calls.append(fd)
                    if len(calls) == point + 1:
                        raise OSError(errno.ENOSPC, "No space left on device")
                return real_fsync(fd)

            os.fsync = fsync

        def work(out, failing=failing):
            failing(out)
            try:
                save_pipeline(load_pipeline(path), path)
                print("SAVED", file=out)
            except OSError as error:
                print("FAILED", error, file=out)

        pid, out = forked(work, path.parent.parent)
        text = out.read()
        assert exit_code(pid) == 0
        assert "FAILED" in text and "No space left on device" in text, (point, text)
        assert not any(".tmp-" in p.name for p in path.parent.rglob("*")), point
        assert answers(load_pipeline(path, pipeline_name="query")) == before == expected


def _generations(path: Path):
    return sorted(p for p in (path.parent / f"{path.stem}.files").iterdir() if p.is_dir())


def test_a_loaded_store_works_on_its_own_copy_of_the_database(saved):
    """A load opens a working copy of the saved SQLite database: deleting passages through one loaded pipeline
    changes neither the saved files (their checksums, the database's included, still verify) nor another load
    of the same folder."""
    from haystack_dcsr.core.storage.checksums import verify_checksums

    path, expected = saved
    first, second = (load_pipeline(path, pipeline_name="query") for _ in range(2))
    count = second.get_node("Retriever").document_store.get_document_count()
    assert first.get_node("Retriever").delete_passages(filters={"title": ["Penicillin"]}) > 0
    assert first.get_node("Retriever").document_store.get_document_count() < count
    assert second.get_node("Retriever").document_store.get_document_count() == count
    assert answers(second) == expected
    (generation,) = _generations(path)
    (listing,) = generation.glob("*.faiss.sha256")
    assert listing.name.replace(".faiss.sha256", ".db") in listing.read_text()
    verify_checksums(generation, listing=listing.name)
    assert answers(load_pipeline(path, pipeline_name="query")) == expected


def _folder_state(folder: Path):
    """Every file under ``folder`` with its size and modification time."""
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_process_killed_after_an_unsaved_deletion_leaves_the_folder_as_saved(saved, tmp_path):
    """A process loads, deletes passages and is killed before it saves: nothing in the saved folder changed (no
    file added, none written), the folder loads and answers as saved, and that load removes the dead process's
    working copy (outside the folder) while this process's stays."""
    from haystack_dcsr.haystack1.engine.working_copies import working_folder

    path, expected = saved
    before = _folder_state(path.parent)

    def delete_and_wait(out):
        pipeline = load_pipeline(path, pipeline_name="query")
        print("DELETED", pipeline.get_node("Retriever").delete_passages(filters={"title": ["Penicillin"]}), file=out)
        time.sleep(600)

    pid, out = forked(delete_and_wait, tmp_path)
    assert out.readline().split()[0] == "DELETED"
    assert [p.stem.rsplit("-", 2)[1] for p in working_folder().glob(f"*-{pid}-*.db")] == [str(pid)]
    os.kill(pid, signal.SIGKILL)
    assert exit_code(pid) == -signal.SIGKILL
    assert _folder_state(path.parent) == before
    loaded = load_pipeline(path, pipeline_name="query")
    assert answers(loaded) == expected
    assert not list(working_folder().glob(f"*-{pid}-*.db"))  # the dead child's copy went
    assert list(working_folder().glob(f"*-{os.getpid()}-*.db"))  # ours stays
    assert _folder_state(path.parent) == before  # loading wrote nothing into the save


def test_a_loaded_pipeline_answers_after_its_generation_is_removed(saved, monkeypatch):
    """A loaded pipeline needs nothing more from its saved folder: after two newer saves removed the generation
    it was loaded from (no grace period), it still answers as saved, and its store still deletes and writes."""
    path, expected = saved
    monkeypatch.setattr(pipelines, "SUPERSEDED_GRACE_S", 0.0)
    (first,) = _generations(path)
    loaded = load_pipeline(path, pipeline_name="query")
    for _ in range(2):
        save_pipeline(load_pipeline(path), path)
    assert first not in _generations(path) and len(_generations(path)) == 2
    assert answers(loaded) == expected
    store = loaded.get_node("Retriever").document_store
    count = store.get_document_count()
    assert loaded.get_node("Retriever").delete_passages(filters={"title": ["Penicillin"]}) > 0
    assert 0 < store.get_document_count() < count


def test_a_loaded_store_is_not_saved_naming_its_working_copy(saved, tmp_path):
    """``copy_database=False`` references the store's database instead of copying it; for a loaded save that is
    the working copy, which goes with the store: refused, and nothing is written."""
    path, _ = saved
    store = load_pipeline(path, pipeline_name="query").get_node("Retriever").document_store
    with pytest.raises(ValueError, match="working copy this store was loaded with"):
        save_faiss_store(store, tmp_path / "again" / "index.faiss", copy_database=False)
    assert not list((tmp_path / "again").glob("*"))


def test_a_forked_child_releasing_what_it_inherited_leaves_the_parents_copy(saved, tmp_path):
    """A forked child inherits the parent's table of working copies; when it releases them (its inherited store
    collected, or its exit) the parent's copy stays, and the parent's store still answers."""
    from haystack_dcsr.haystack1.engine import working_copies

    path, expected = saved
    pipeline = load_pipeline(path, pipeline_name="query")
    copy = Path(pipeline.get_node("Retriever").document_store.session.bind.url.database)
    assert copy in working_copies._OWNED

    def release_everything(out):
        for inherited in list(working_copies._OWNED):
            working_copies.release(inherited)
        print("RELEASED", file=out)

    pid, out = forked(release_everything, tmp_path)
    assert out.read().strip() == "RELEASED" and exit_code(pid) == 0
    assert copy.exists()
    assert answers(pipeline) == expected
