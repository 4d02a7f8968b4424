"""Where each real dataset's files come from and what they are known to be: the download groups
(`GROUPS`: folder, files with their URLs and pins, source page, license) and the released line and
row counts. Plain data: `download` fetches from it, `verify` checks files against its pins.

Sources (documented in data/README.md): see `kgrag_utils.datasets.download`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..integrity import Pin

__all__ = ["RemoteFile", "Group", "GROUPS", "CLUTRR_ROWS", "METAQA_LINES", "RELEASED_LINES", "DOCUMENTED_COPIES", "HF_DATASETS",
           "group_for_folder", "folder_pins"]

_IRN = "https://raw.githubusercontent.com/zmtkeke/IRN/master"
_HIPPO = "https://raw.githubusercontent.com/OSU-NLP-Group/HippoRAG/legacy"
_CLUTRR = "https://raw.githubusercontent.com/facebookresearch/clutrr/main"
CLUTRR_DRIVE_FILE = "1SEq_e1IVCDDzsBIBhoUQ5pOVH5kxRoZF"
CLUTRR_DATA_FOLDER = "data_089907f8"
METAQA_DRIVE_FOLDER = "https://drive.google.com/drive/folders/0B-36Uca2AvwhTWVFSUZqRXVtbUE?resourcekey=0-kdv6ho5KcpEXdI2aUdLn_g"
FACTKG_DRIVE_FOLDER = "https://drive.google.com/drive/folders/1q0_MqBeGAp5_cBJCBf_1alYaYm14OeTk"
FACTKG_FILES = ("factkg_train.pickle", "factkg_dev.pickle", "factkg_test.pickle",
                "dbpedia_2015_undirected.pickle", "dbpedia_2015_undirected_light.pickle")
_FACTKG_REPO = "https://raw.githubusercontent.com/jiho283/FactKG/43d724015f3d751925ba0495ab1e769f1469131f"
IIRC_BASE = "https://iirc-dataset.s3.us-west-2.amazonaws.com"
#: IRCoT's repository at the commit the shared copy was taken from (data README, IRCoT_demos/SOURCE.md)
_IRCOT = "https://raw.githubusercontent.com/StonyBrookNLP/ircot/3c1820f698eea5eeddb4fba3c56b64c961e063e4"
_IRCOT_PROMPT = "gold_with_3_distractors_context_cot_qa_codex.txt"
#: the GNN-RAG and ToG commits of the shared WebQSP / CWQ copy (its SOURCE.md); the copy gzips the files
_GNN_RAG = "https://raw.githubusercontent.com/cmavro/GNN-RAG/28d31bc0db3d54f0930e6125f1c98b5b1ace1ba4"
_TOG = "https://raw.githubusercontent.com/GasolSun36/ToG/934064c4a8a391c7f351339676f29ed764e40054"
#: Hugging Face dataset repositories and the revision fetched ("main" where no commit is pinned).
HF_DATASETS = {"webqsp": ("rmanluo/RoG-webqsp", "main"),
               "cwq": ("rmanluo/RoG-cwq", "b0f6275586286312c4e99ef4b0adc65463c91f8e")}


@dataclass(frozen=True)
class RemoteFile:
    """One file to download: where from, where to (relative to the group folder), and its checks."""

    url: str
    dest: str
    sha256: str | None = None
    size: int | None = None
    lines: int | None = None


@dataclass(frozen=True)
class Group:
    folder: str
    files: tuple[RemoteFile, ...]
    page: str  # where a person can download by hand
    license: str
    special: str | None = None  # "metaqa" | "clutrr" | "factkg": Google Drive; "hf": hub; "iirc": archives


GROUPS: dict[str, Group] = {
    "pathquestion": Group("PathQuestion", (
        RemoteFile(f"{_IRN}/PathQuestion/PQ-2H.txt", "PQ-2H.txt",
                   "86f4a060a6d8a3d496671e6cfa73bf15b7f71422e9b49eefebc3f8fbe3618aef", 331278, 1908),
        RemoteFile(f"{_IRN}/PathQuestion/PQ-3H.txt", "PQ-3H.txt",
                   "e0c5da286a830111e18122ad14ac195dc6bf90d42e2ec5c0c96522b51f16c69f", 1240569, 5198),
        RemoteFile(f"{_IRN}/PathQuestion/2H-kb.txt", "2H-kb.txt",
                   "1e8d8e7f950d7d0fe949b377b065b569c5b84d87273ec1600331f5ba985145d7", 55326, 1211),
        RemoteFile(f"{_IRN}/PathQuestion/3H-kb.txt", "3H-kb.txt",
                   "27eb687c67086eb684a43f524cc9560f76f52161e1a038b6be45ff2a24c50374", 139318, 2839),
        RemoteFile(f"{_IRN}/PathQuestion/readme.txt", "readme.txt",
                   "07a2a2879ef2d9baa27c0cdcddfbeca9d2143ead3ecff041e27515620ddfaa17", 540),
    ), "https://github.com/zmtkeke/IRN/tree/master/PathQuestion", "none stated (research data)"),
    "wc2014": Group("WC2014", (
        RemoteFile(f"{_IRN}/WC2014/WC-P1.txt", "WC-P1.txt"),
        RemoteFile(f"{_IRN}/WC2014/WC-P2.txt", "WC-P2.txt",
                   "ad8068f723f90780ecd1d1135a94d9066ed8aa0fb48b18522eaf7f63fdcb6872", 715685, 1472),
        RemoteFile(f"{_IRN}/WC2014/WC-C.txt", "WC-C.txt",
                   "88739b89bbec881b539d95fb80f8dc824504ebcdc7983263663c545314cb892c", 1245570, 2208),
        RemoteFile(f"{_IRN}/WC2014/WC2014.txt", "WC2014.txt",
                   "e1c8233e4c3f198497cb752c47e631ef834ae3ff2f7eff2b7779ba035750a489", 262998, 6482),
    ), "https://github.com/zmtkeke/IRN/tree/master/WC2014", "none stated (research data)"),
    "hotpotqa": Group("HotpotQA", (
        RemoteFile(f"{_HIPPO}/data/hotpotqa_train.json", "hipporag_hotpotqa_train_100q.json",
                   "6c0e2689d03c94b3bb4d5f94ed806ea4f4eb4f46c12132f8e91df774ad5c5a22", 810836),
        RemoteFile(f"{_HIPPO}/data/hotpotqa_train_corpus.json", "hipporag_hotpotqa_train_corpus.json",
                   "2671af600095eabc5b3f3bc3728861682f14fcced84ef1386509a8ae92647f88", 640159),
        RemoteFile(f"{_HIPPO}/LICENSE", "LICENSE.HippoRAG-MIT.txt"),
    ), "https://github.com/OSU-NLP-Group/HippoRAG/tree/legacy/data", "CC BY-SA 4.0 (HotpotQA); MIT (HippoRAG files)"),
    "musique": Group("MuSiQue", (
        RemoteFile(f"{_HIPPO}/data/musique_train.json", "hipporag_musique_train_100q.json",
                   "bca674746844637f5c68408a96b67bc0542d98e7c53715f3acafe144bd5e4ff4", 1179088),
        RemoteFile(f"{_HIPPO}/data/musique_train_corpus.json", "hipporag_musique_train_corpus.json",
                   "79845dd085f9df49c8ce440208763e2611aeb86c81ee0bdad2094504381bb651", 974514),
        RemoteFile(f"{_HIPPO}/output/openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json",
                   "hipporag_openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json",
                   "4258bcc89bb20bb5c20e6700b87e21063521a6c3ef5a136ab0d0d7c0ea237585", 3344000),
        RemoteFile(f"{_HIPPO}/LICENSE", "LICENSE.HippoRAG-MIT.txt"),
    ), "https://github.com/OSU-NLP-Group/HippoRAG/tree/legacy/data", "CC BY 4.0 (MuSiQue); MIT (HippoRAG files)"),
    "2wiki": Group("2WikiMultiHopQA", (
        RemoteFile(f"{_HIPPO}/data/2wikimultihopqa_corpus.json", "hipporag_2wikimultihopqa_corpus.json",
                   "9d6e352952aafb18dab22bf8195039461321a44a949df902ae83bce134ad238a", 3083943),
        RemoteFile(f"{_HIPPO}/data/2wikimultihopqa.json", "2wikimultihopqa.json"),
        RemoteFile(f"{_HIPPO}/LICENSE", "LICENSE.HippoRAG-MIT.txt"),
    ), "https://github.com/OSU-NLP-Group/HippoRAG/tree/legacy/data", "Apache-2.0 (2WikiMultiHopQA); MIT (HippoRAG files)"),
    "clutrr": Group("CLUTRR", (
        RemoteFile(f"{_CLUTRR}/clutrr/store/rules_store.yaml", "clutrr_store/rules_store.yaml",
                   "122b57241d1cba17e6def0c246007e3e6a9b3c8c654290fecaca3e1fde5bf14a", 1594),
        RemoteFile(f"{_CLUTRR}/clutrr/store/relations_store.yaml", "clutrr_store/relations_store.yaml",
                   "c2b9e2723aea7007abb7418e97f294fa696a75c0466d0195c21d78c96c33363d", 3578),
        RemoteFile(f"{_CLUTRR}/clutrr/store/question_store.yaml", "clutrr_store/question_store.yaml",
                   "10f84ed45ca86a008772d63deea1075cb4e6ec2ed77a512e91aef584eac8dc21", 476),
        RemoteFile(f"{_CLUTRR}/clutrr/store/attribute_store.json", "clutrr_store/attribute_store.json",
                   "d196562c3c2746b393859d42a9d151f182d802f3de202eccc19d79ffe17df46f", 1757),
        RemoteFile(f"{_CLUTRR}/LICENSE", "LICENSE.clutrr-CC-BY-NC-4.0.txt"),
    ), f"https://drive.google.com/file/d/{CLUTRR_DRIVE_FILE}/view", "CC BY-NC 4.0", special="clutrr"),
    "metaqa": Group("MetaQA", (), METAQA_DRIVE_FOLDER, "CC BY 3.0", special="metaqa"),
    "factkg": Group("FactKG", (
        RemoteFile(f"{_FACTKG_REPO}/with_evidence/retrieve/model/relation_predict/relations_for_final.pickle",
                   "relations_for_final.pickle"),
    ), FACTKG_DRIVE_FOLDER, "none stated by FactKG; DBpedia data CC BY-SA 3.0", special="factkg"),
    "webqsp": Group("RoG-webqsp", (), "https://huggingface.co/datasets/rmanluo/RoG-webqsp",
                    "none stated on the hub card; Freebase-derived (Freebase: CC BY 2.5)", special="hf"),
    "cwq": Group("RoG-cwq", (), "https://huggingface.co/datasets/rmanluo/RoG-cwq",
                 "none stated on the hub card; Freebase-derived (Freebase: CC BY 2.5)", special="hf"),
    "ircot": Group("IRCoT_demos", (
        RemoteFile(f"{_IRCOT}/prompt_generator/data_annotations/musique.jsonnet",
                   "prompt_generator/data_annotations/musique.jsonnet",
                   "fc5e7923c648c0f312d9a969ce8703eac513ef0fad9c6e758ee051efa26aa241", 22802, 549),
        RemoteFile(f"{_IRCOT}/prompt_generator/data_annotations/hotpotqa.jsonnet",
                   "prompt_generator/data_annotations/hotpotqa.jsonnet",
                   "43d06784c3dfd3ccd18d6691a9267fab6c4b69fb755eea7d174f77fae6937a6e", 48523, 1077),
        RemoteFile(f"{_IRCOT}/prompt_generator/data_annotations/2wikimultihopqa.jsonnet",
                   "prompt_generator/data_annotations/2wikimultihopqa.jsonnet",
                   "24ea72683b9375b5e590c99fa8ebeb13b2808428ca547c02a7c08e6ae218232a", 38449, 888),
        RemoteFile(f"{_IRCOT}/prompts/musique/{_IRCOT_PROMPT}", f"prompts/musique/{_IRCOT_PROMPT}",
                   "406602227e58733de4396230008ea9ccc8a2c167be2006f24e4fe77e3446b5d5", 58275, 421),
        RemoteFile(f"{_IRCOT}/prompts/hotpotqa/{_IRCOT_PROMPT}", f"prompts/hotpotqa/{_IRCOT_PROMPT}",
                   "299fbb3b9e3b642cbe4c09ec035e64a2627a5d118aa2aaede8c8829e4ab7dbe8", 84134, 577),
        RemoteFile(f"{_IRCOT}/prompts/2wikimultihopqa/{_IRCOT_PROMPT}", f"prompts/2wikimultihopqa/{_IRCOT_PROMPT}",
                   "f4ffc3fdcf1616b60b5317fc44da61ba1306c8413d86c59d01621b0433daad95", 54121, 427),
        RemoteFile(f"{_IRCOT}/LICENSE", "LICENSE",
                   "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4", 11357),
    ), "https://github.com/StonyBrookNLP/ircot", "Apache-2.0 (IRCoT); MuSiQue CC BY 4.0, HotpotQA CC BY-SA 4.0, "
       "2WikiMultiHopQA Apache-2.0"),
    "webqsp_cwq": Group("WebQSP_CWQ", tuple(
        RemoteFile(f"{_GNN_RAG}/{rel}", f"gnn-rag/{rel}") for rel in (
            *(f"llm/results/gen_rule_path/RoG-webqsp/RoG/{s}/predictions_3_False.jsonl" for s in ("train", "validation", "test")),
            "llm/results/gen_rule_path/RoG-cwq/RoG/test/predictions_2_False.jsonl",
            *(f"llm/results/KGQA-GNN-RAG/rearev-lmsr/RoG-{b}/RoG/test/results_gen_rule_path_RoG-{b}_RoG_test_"
              "predictions_3_False_jsonl/False/detailed_eval_result.jsonl" for b in ("webqsp", "cwq")))
    ) + (RemoteFile(f"{_TOG}/data/cwq.json", "tog/data/cwq.json"),),
        "https://github.com/cmavro/GNN-RAG", "WebQSP CC BY 4.0, CWQ research data; RoG preprocessing MIT; the GNN-RAG "
        "repository states no licence (the 18 whole subgraphs are not downloadable: a derived copy)"),
    "iirc": Group("IIRC", (
        RemoteFile(f"{IIRC_BASE}/iirc_test.json", "iirc_test.json"),
    ), "https://allenai.org/data/iirc", "see allenai.org/data/iirc (not verified here)", special="iirc"),
}

#: Rows (data lines) of the CLUTRR files we know, checked after extraction.
CLUTRR_ROWS = {"1.2,1.3_train.csv": 10094, "1.2_test.csv": 38, "1.3_test.csv": 105, "1.4_test.csv": 190,
               "1.5_test.csv": 174, "1.6_test.csv": 107, "1.7_test.csv": 144}
#: Lines of the MetaQA files, per hop and split (the official release).
METAQA_LINES = {(1, "dev"): 9992, (1, "test"): 9947, (2, "dev"): 14872, (2, "test"): 14872,
                (3, "dev"): 14274, (3, "test"): 14274}
#: Line counts of released files that the download step does not pin (MetaQA's Google Drive release).
RELEASED_LINES = {("MetaQA", "kb.txt"): 134_741}
#: The copies the data README documents (`../shared/data`, the development and CI copies; data/README.md): size,
#: sha256 and lines of every file a loader reads that the download step does not pin. MetaQA's KB is this
#: project's reconstruction (`kb_reconstructed.txt`, 128,185 facts); the question files are the release's.
DOCUMENTED_COPIES: dict[tuple[str, str], Pin] = {
    ("2WikiMultiHopQA", "2wiki_50q_supporting_titles.json"): Pin(9247, "dbe6fc6a2373ce3f0a6b7e63a8fb1e4c32ffbb48c53ac5d9cd49fa7c50fe2b3d", 373),
    ("CLUTRR", "data_089907f8/1.2,1.3_train.csv"): Pin(8261265, "07246f613f87db1eb410fcb5fcb5264b0fefc9a98410283a73520b681a0dc416", 10095),
    ("CLUTRR", "data_089907f8/1.2_test.csv"): Pin(25592, "9f4a950fc5122a64af75fb80e628feabfaa2ddb606019163f4f0a8ed739acadd", 39),
    ("CLUTRR", "data_089907f8/1.3_test.csv"): Pin(98889, "9eef7ddbe865a83fcc9b53e2ec4248bed35bf43681007f9ade1072539d723918", 106),
    ("CLUTRR", "data_089907f8/1.4_test.csv"): Pin(236929, "91b7162d45daa69efee31372280f86d2140863bbe464c39c85c1157e642ceca5", 191),
    ("CLUTRR", "data_089907f8/1.5_test.csv"): Pin(263166, "54ce4fe99250bb26f2d2bc327f0e021d86fdb426a887374f0257a71541df9f93", 175),
    ("CLUTRR", "data_089907f8/1.6_test.csv"): Pin(183301, "500100329e9c21b26865d558cb9481c4579f9f96a825f358e50e2ed1b4429393", 108),
    ("CLUTRR", "data_089907f8/1.7_test.csv"): Pin(291316, "ddbe49064976fbca203f069b0faab519d5f290f57c8b39ebc4d81587ef02b2ca", 145),
    # WebQSP / CWQ questions with RoG's gold paths (gzipped copies of the GNN-RAG / ToG files; the 18 whole
    # subgraphs are derived from graph-constrained-reasoning-dca's demo files: WebQSP_CWQ/SOURCE.md in the data copy)
    ("WebQSP_CWQ", "gnn-rag/llm/results/KGQA-GNN-RAG/rearev-lmsr/RoG-cwq/RoG/test/results_gen_rule_path_RoG-cwq_RoG_test_predictions_3_False_jsonl/False/detailed_eval_result.jsonl.gz"):
        Pin(191827, "c3c6142ef42986a4dfbce84fd8ab6f5f68e7e74145ebeb15675865d3d545a691"),
    ("WebQSP_CWQ", "gnn-rag/llm/results/KGQA-GNN-RAG/rearev-lmsr/RoG-webqsp/RoG/test/results_gen_rule_path_RoG-webqsp_RoG_test_predictions_3_False_jsonl/False/detailed_eval_result.jsonl.gz"):
        Pin(193088, "66b47c0010f6bd50fbd7d701f6c7f482279a263d6a8f8bac8e0585709a0844fd"),
    ("WebQSP_CWQ", "gnn-rag/llm/results/gen_rule_path/RoG-cwq/RoG/test/predictions_2_False.jsonl.gz"):
        Pin(623084, "ee2294e26af948f76ecaa46d5976f145a81725863c61a8e7642353fdaa85361f"),
    ("WebQSP_CWQ", "gnn-rag/llm/results/gen_rule_path/RoG-webqsp/RoG/test/predictions_3_False.jsonl.gz"):
        Pin(257453, "3ede7c3d0911058834440df480c66be69383b02b6939c7daa6a1c4ffde4581e5"),
    ("WebQSP_CWQ", "gnn-rag/llm/results/gen_rule_path/RoG-webqsp/RoG/train/predictions_3_False.jsonl.gz"):
        Pin(456808, "c9b228729b64ef84c30887cc039d9498e3b1a997d77bdf2f8553c5595a0ab47d"),
    ("WebQSP_CWQ", "gnn-rag/llm/results/gen_rule_path/RoG-webqsp/RoG/validation/predictions_3_False.jsonl.gz"):
        Pin(40954, "4d37c5d1940ec58d438488b3fb8fd527514fcac51580c628568851ffa4b92f1e"),
    ("WebQSP_CWQ", "gcr-dca/webqsp_test18_rog_format.jsonl.gz"):
        Pin(814429, "300a24f2b34d089514a8a79b4f938ae80b35c0b4b76490e6a6c274061805c9f7"),
    ("WebQSP_CWQ", "tog/data/cwq.json.gz"):
        Pin(573083, "e5b6fffbd2ee312d7e0f8495d187f3f99a253840f644767c9266c69f92684599"),
    ("MetaQA", "kb_reconstructed.txt"): Pin(4969552, "a28616c66d0e543ee062674673606bf4c1118a84ea2972286e075ffb2573bf16", 128185),
    ("MetaQA", "qa/1-hop/qa_dev_qtype.txt"): Pin(155425, "43c660806c1ba17ead85a34a60b39c8cd965db943a801355963974f9e122d3b8", 9992),
    ("MetaQA", "qa/1-hop/qa_test_qtype.txt"): Pin(154556, "6390ded9d7b7e56f95af96429b38e98ee14c5a617963dc69f396c8cc4f6ff64d", 9947),
    ("MetaQA", "qa/1-hop/vanilla/qa_dev.txt"): Pin(673670, "3c68fa73a14d9b9616e49f08e2d8b65e024af417708306874fe4d398634620d3", 9992),
    ("MetaQA", "qa/1-hop/vanilla/qa_test.txt"): Pin(675227, "c57e9c2c4c05e5eec4503460042c09bfa3e80ea1a5ecaf361c92dd81d6c7bece", 9947),
    ("MetaQA", "qa/2-hop/qa_dev_qtype.txt"): Pin(379966, "e3936971b096954cfa965f5b8747fe4fa5b3b762f9fe63796d33df0f291ddfdd", 14872),
    ("MetaQA", "qa/2-hop/qa_test_qtype.txt"): Pin(379927, "660b87183f3d21f3f64eaa5bcd12036124662e518a3958b5c47389a11e980210", 14872),
    ("MetaQA", "qa/2-hop/vanilla/qa_dev.txt"): Pin(2183998, "a713ae6b4a7cdccfdda57ac99092f4114a1f8b0c4ba51b4466a15496a4ff6fbd", 14872),
    ("MetaQA", "qa/2-hop/vanilla/qa_test.txt"): Pin(2150912, "b1c4f1ad77f34a27e0e5a13c08b436c6f4c9a49dccd8d43639a569ee5cd906a1", 14872),
    ("MetaQA", "qa/3-hop/qa_dev_qtype.txt"): Pin(500330, "8734c5f528c81b39e459ded4ef4e99cf5e41e0d95c81ab90d3197ebcdd0bb687", 14274),
    ("MetaQA", "qa/3-hop/qa_test_qtype.txt"): Pin(500798, "08dce72050b7d1e6271772b5d0066e2b14a00d6c64062a7d24d1f580e94f0e93", 14274),
    ("MetaQA", "qa/3-hop/vanilla/qa_dev.txt"): Pin(3274801, "c638b99f97db93112f7a9ceec47675066cc9efc93b7ecd43e22c54ab531741d9", 14274),
    ("MetaQA", "qa/3-hop/vanilla/qa_test.txt"): Pin(3328337, "f4c2a801f864e80e809655a20b4b8c9904f4a2885a7f23850b2fabd8d38a6540", 14274),
}


def group_for_folder(folder: str) -> str | None:
    """The download group whose files live in this data folder (None when none does)."""
    return next((group for group, g in GROUPS.items() if g.folder == folder), None)


def folder_pins(folder: str) -> dict[str, Pin]:
    """Relative path -> Pin of the files of one data folder the download step knows."""
    pins: dict[str, Pin] = {}
    for group in GROUPS.values():
        if group.folder == folder:
            for f in group.files:
                if f.sha256 or f.size or f.lines:
                    pins[f.dest] = Pin(size=f.size, sha256=f.sha256, lines=f.lines)
    for (fold, rel), pin in DOCUMENTED_COPIES.items():
        if fold == folder:
            pins.setdefault(rel, pin)
    if folder == "MetaQA":
        for (k, split), lines in METAQA_LINES.items():
            pins.setdefault(f"qa/{k}-hop/vanilla/qa_{split}.txt", Pin(lines=lines))
            pins.setdefault(f"qa/{k}-hop/qa_{split}_qtype.txt", Pin(lines=lines))
            pins.setdefault(f"qa/{k}-hop/ntm/qa_{split}.txt", Pin(lines=lines))  # the paraphrases: same questions
    for (fold, rel), lines in RELEASED_LINES.items():
        if fold == folder:
            pins.setdefault(rel, Pin(lines=lines))
    if folder == "MetaQA":  # the official archive's layout ({k}-hop/ at the top, kb/kb.txt) is read too
        for rel, pin in list(pins.items()):
            if rel.startswith("qa/"):
                pins.setdefault(rel[len("qa/"):], pin)
            if rel in ("kb.txt", "kb_reconstructed.txt"):
                pins.setdefault(f"kb/{rel}", pin)
    return pins
