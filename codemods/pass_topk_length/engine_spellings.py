"""The engine's own spellings of the width's field (field_writes): statements sglang's releases write that give
`index_topk` a value of their own (a config class's default, a `getattr` with a default), keyed by
field_writes.fingerprint. Rebuilt by `python3 bench/engine_spellings.py`; a statement a fork changes is its own."""
SPELLINGS = {
    '22426c89156da8f78576818f': 'sglang 0.5.12 sglang/srt/configs/deepseek_v4.py:60',
    '2d225d249d328f23e83f97e8': 'sglang 0.5.12 sglang/srt/configs/model_config.py:113',
    'a488b3153ea811f915623b15': 'sglang 0.5.12 sglang/srt/layers/attention/deepseek_v4_backend.py:363',
    'b50c8382ca0ffbafd923d4fa': 'sglang 0.5.12 sglang/srt/model_executor/model_runner.py:775',
    '7c095613d8f774bc420ccaa5': 'sglang 0.5.13 sglang/srt/configs/model_config.py:113',
    '85618e503655eca615233e30': 'sglang 0.5.13 sglang/srt/layers/attention/deepseek_v4_backend_hip_radix.py:374',
    '004eab87be767113e4706455': 'sglang 0.5.14 sglang/srt/model_executor/model_runner.py:833',
    'edeb7811f1b6e0464b201d74': 'sglang 0.5.16 sglang/srt/configs/model_config.py:119',
    '6056814093dc1c6363b55d20': 'sglang 0.5.16 sglang/srt/model_executor/model_runner.py:781',
    '05a4bbc0fc672f4b11e61a20': 'sglang-kt 0.7.0 sglang/srt/configs/deepseek_v4.py:33',
    'e6a9ef28799d871bd4ef22d6': 'sglang-kt 0.7.0 sglang/srt/layers/attention/indexer_topk_capturer.py:38',
    'c347efdbe1cd3e9526a16e88': 'sglang-kt 0.7.2 sglang/srt/configs/glm5_next.py:128',
    '08e5bd9d245cdab5a56081e3': 'sglang-kt 0.7.2 sglang/srt/configs/glm5_next.py:247',
}
