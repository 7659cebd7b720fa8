"""Small transformers models built from configs (random weights, no hub
access): shared by tests/test_hf_models.py and bench/models.py.

Each entry builds (model, inputs) deterministically: 2 layers, small hidden
sizes, batch 2, short sequences, eval() mode.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402

B, S, V = 2, 8, 128


def _ids(seq=S):
    return torch.randint(0, V, (B, seq), generator=torch.Generator().manual_seed(1))


def _mask(seq=S):
    m = torch.ones(B, seq, dtype=torch.long)
    m[1, -2:] = 0                    # some padding in the second row
    return m


def bert():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=64)
    return BertModel(cfg), dict(input_ids=_ids(), attention_mask=_mask())


def roberta():
    from transformers import RobertaConfig, RobertaForSequenceClassification
    cfg = RobertaConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64, num_labels=3)
    return RobertaForSequenceClassification(cfg), dict(input_ids=_ids(), attention_mask=_mask())


def distilbert():
    from transformers import DistilBertConfig, DistilBertModel
    cfg = DistilBertConfig(vocab_size=V, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                           max_position_embeddings=64)
    return DistilBertModel(cfg), dict(input_ids=_ids(), attention_mask=_mask())


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=V, n_embd=32, n_layer=2, n_head=4, n_positions=64)
    return GPT2LMHeadModel(cfg), dict(input_ids=_ids())


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return LlamaForCausalLM(cfg), dict(input_ids=_ids(), use_cache=False)


def qwen2():
    from transformers import Qwen2Config, Qwen2ForCausalLM
    cfg = Qwen2Config(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    return Qwen2ForCausalLM(cfg), dict(input_ids=_ids(), use_cache=False)


def mixtral():
    from transformers import MixtralConfig, MixtralForCausalLM
    cfg = MixtralConfig(vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                        num_local_experts=4, num_experts_per_tok=2)
    return MixtralForCausalLM(cfg), dict(input_ids=_ids(), use_cache=False)


def t5():
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(vocab_size=V, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4)
    return T5ForConditionalGeneration(cfg), dict(input_ids=_ids(), decoder_input_ids=_ids(4),
                                                 use_cache=False)


def bart():
    from transformers import BartConfig, BartForConditionalGeneration
    cfg = BartConfig(vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=2,
                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                     decoder_ffn_dim=64, max_position_embeddings=64)
    return BartForConditionalGeneration(cfg), dict(input_ids=_ids(), decoder_input_ids=_ids(4),
                                                   use_cache=False)


def vit():
    from transformers import ViTConfig, ViTModel
    cfg = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                    image_size=32, patch_size=8)
    return ViTModel(cfg), dict(pixel_values=torch.randn(B, 3, 32, 32,
                                                        generator=torch.Generator().manual_seed(2)))


def resnet():
    from transformers import ResNetConfig, ResNetModel
    cfg = ResNetConfig(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], layer_type="basic")
    return ResNetModel(cfg), dict(pixel_values=torch.randn(B, 3, 32, 32,
                                                           generator=torch.Generator().manual_seed(3)))


def convnext():
    from transformers import ConvNextConfig, ConvNextModel
    cfg = ConvNextConfig(hidden_sizes=[16, 32], depths=[1, 1], num_stages=2, image_size=32)
    return ConvNextModel(cfg), dict(pixel_values=torch.randn(B, 3, 32, 32,
                                                             generator=torch.Generator().manual_seed(4)))


def whisper():
    from transformers import WhisperConfig, WhisperModel
    cfg = WhisperConfig(vocab_size=V, d_model=32, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, num_mel_bins=16, max_source_positions=16,
                        max_target_positions=16, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                        decoder_start_token_id=1)
    feats = torch.randn(B, 16, 32, generator=torch.Generator().manual_seed(5))
    return WhisperModel(cfg), dict(input_features=feats, decoder_input_ids=_ids(4), use_cache=False)


def wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    cfg = Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                         conv_kernel=(10, 3), num_conv_pos_embeddings=8,
                         num_conv_pos_embedding_groups=4, do_stable_layer_norm=True,
                         mask_time_prob=0.0)
    audio = torch.randn(B, 400, generator=torch.Generator().manual_seed(6))
    return Wav2Vec2Model(cfg), dict(input_values=audio)


MODELS = {f.__name__: f for f in (bert, roberta, distilbert, gpt2, llama, qwen2, mixtral, t5, bart,
                                  vit, resnet, convnext, whisper, wav2vec2)}


def build(name):
    """(model in eval mode, inputs) for `name`, with fixed random weights."""
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    return model.eval(), inputs


def tensor_leaves(value):
    """Every tensor in a model output (ModelOutput, tuple, list, dict)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if hasattr(value, "to_tuple"):
        value = value.to_tuple()
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensor_leaves(v)]
    return []
