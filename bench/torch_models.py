"""The PyTorch models bench/torch_bench.py times: tutorial C (the Winter Games translation) at its
size, tutorial B at its size, and tutorial D's torch.nn.Transformer with the tutorial's positional
encoding. The same layers, sizes and errata fixes as xtgrad's modules (nn/tutorial_*), written in
torch.nn so that the two sides of bench/run.sh do the same work. Import it after the thread
settings are in the environment (torch_bench.py sets them before torch loads OpenBLAS).
"""
import math

import torch
import torch.nn as nn


# ---------------------------------------------------------------- tutorial C (Winter Games)
class C:
    d_model, d_ff, d_k, d_v, n_layers, n_heads = 512, 2048, 64, 64, 6, 8
    src_vocab, tgt_vocab, src_len, tgt_len = 8, 9, 7, 7  # PAD = 0, one id per word (the errata fix)


def sinusoid_table(n_position, d_model):
    pos = torch.arange(n_position, dtype=torch.float64).unsqueeze(1)
    hid = torch.arange(d_model, dtype=torch.float64)
    angle = pos / torch.pow(10000.0, 2 * torch.div(hid, 2, rounding_mode="floor") / d_model)
    angle[:, 0::2] = torch.sin(angle[:, 0::2])
    angle[:, 1::2] = torch.cos(angle[:, 1::2])
    return angle.float()


def attn_pad_mask(seq_q, seq_k):
    return seq_k.eq(0).unsqueeze(1).expand(seq_q.size(0), seq_q.size(1), seq_k.size(1))


class CMultiHeadAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_Q = nn.Linear(C.d_model, C.d_k * C.n_heads)
        self.W_K = nn.Linear(C.d_model, C.d_k * C.n_heads)
        self.W_V = nn.Linear(C.d_model, C.d_v * C.n_heads)
        self.linear = nn.Linear(C.n_heads * C.d_v, C.d_model)
        self.layer_norm = nn.LayerNorm(C.d_model)

    def forward(self, Q, K, V, attn_mask):
        residual, B = Q, Q.size(0)
        q_s = self.W_Q(Q).view(B, -1, C.n_heads, C.d_k).transpose(1, 2)
        k_s = self.W_K(K).view(B, -1, C.n_heads, C.d_k).transpose(1, 2)
        v_s = self.W_V(V).view(B, -1, C.n_heads, C.d_v).transpose(1, 2)
        attn_mask = attn_mask.unsqueeze(1).repeat(1, C.n_heads, 1, 1)
        scores = torch.matmul(q_s, k_s.transpose(-1, -2)) / math.sqrt(C.d_k)
        scores.masked_fill_(attn_mask, -1e9)
        attn = torch.softmax(scores, dim=-1)
        context = torch.matmul(attn, v_s).transpose(1, 2).contiguous().view(B, -1, C.n_heads * C.d_v)
        return self.layer_norm(self.linear(context) + residual), attn


class CFeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(C.d_model, C.d_ff, kernel_size=1)
        self.conv2 = nn.Conv1d(C.d_ff, C.d_model, kernel_size=1)
        self.layer_norm = nn.LayerNorm(C.d_model)

    def forward(self, x):
        out = self.conv2(torch.relu(self.conv1(x.transpose(1, 2)))).transpose(1, 2)
        return self.layer_norm(out + x)


class CEncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc_self_attn, self.pos_ffn = CMultiHeadAttention(), CFeedForward()

    def forward(self, x, mask):
        x, attn = self.enc_self_attn(x, x, x, mask)
        return self.pos_ffn(x), attn


class CDecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.dec_self_attn, self.dec_enc_attn, self.pos_ffn = CMultiHeadAttention(), CMultiHeadAttention(), CFeedForward()

    def forward(self, x, enc_out, self_mask, enc_mask):
        x, a1 = self.dec_self_attn(x, x, x, self_mask)
        x, a2 = self.dec_enc_attn(x, enc_out, enc_out, enc_mask)
        return self.pos_ffn(x), a1, a2


class CTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc_token_emb = nn.Embedding(C.src_vocab, C.d_model)
        self.enc_pos_emb = nn.Embedding.from_pretrained(sinusoid_table(C.src_len + 1, C.d_model), freeze=True)
        self.enc_layers = nn.ModuleList([CEncoderLayer() for _ in range(C.n_layers)])
        self.dec_token_emb = nn.Embedding(C.tgt_vocab, C.d_model)
        self.dec_pos_emb = nn.Embedding.from_pretrained(sinusoid_table(C.tgt_len + 1, C.d_model), freeze=True)
        self.dec_layers = nn.ModuleList([CDecoderLayer() for _ in range(C.n_layers)])
        self.projection = nn.Linear(C.d_model, C.tgt_vocab, bias=False)

    def forward(self, enc_inputs, dec_inputs):
        pos_e = torch.arange(1, enc_inputs.size(1) + 1).unsqueeze(0)
        pos_d = torch.arange(1, dec_inputs.size(1) + 1).unsqueeze(0)
        x = self.enc_token_emb(enc_inputs) + self.enc_pos_emb(pos_e)
        mask = attn_pad_mask(enc_inputs, enc_inputs)
        attns = []
        for layer in self.enc_layers:
            x, a = layer(x, mask)
            attns.append(a)
        y = self.dec_token_emb(dec_inputs) + self.dec_pos_emb(pos_d)
        L = dec_inputs.size(1)
        subsequent = torch.triu(torch.ones(1, L, L, dtype=torch.uint8), diagonal=1)
        self_mask = torch.gt(attn_pad_mask(dec_inputs, dec_inputs).byte() + subsequent, 0)
        enc_mask = attn_pad_mask(dec_inputs, enc_inputs)
        for layer in self.dec_layers:
            y, a1, a2 = layer(y, x, self_mask, enc_mask)
            attns += [a1, a2]
        logits = self.projection(y)
        return logits.view(-1, logits.size(-1)), attns


# ---------------------------------------------------------------- tutorial B
class BMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.W_q, self.W_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.W_v, self.W_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def split_heads(self, x):
        B, L, _ = x.size()
        return x.view(B, L, self.num_heads, self.d_k).transpose(1, 2)

    def forward(self, Q, K, V, mask):
        Q, K, V = self.split_heads(self.W_q(Q)), self.split_heads(self.W_k(K)), self.split_heads(self.W_v(V))
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(self.d_k)
        scores = scores.masked_fill(mask == 0, -1e9)
        out = torch.matmul(torch.softmax(scores, dim=-1), V)
        B, _, L, _ = out.size()
        return self.W_o(out.transpose(1, 2).contiguous().view(B, L, self.d_model))


class BFeedForward(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.fc1, self.fc2, self.relu = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model), nn.ReLU()

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class BPositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
        pe[:, 0::2], pe[:, 1::2] = torch.sin(position * div_term), torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


class BEncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout):
        super().__init__()
        self.self_attn, self.feed_forward = BMultiHeadAttention(d_model, num_heads), BFeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.dropout = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.Dropout(dropout)

    def forward(self, x, mask):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, mask)))
        return self.norm2(x + self.dropout(self.feed_forward(x)))


class BDecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout):
        super().__init__()
        self.self_attn, self.cross_attn = BMultiHeadAttention(d_model, num_heads), BMultiHeadAttention(d_model, num_heads)
        self.feed_forward = BFeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, enc, src_mask, tgt_mask):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, tgt_mask)))
        x = self.norm2(x + self.dropout(self.cross_attn(x, enc, enc, src_mask)))
        return self.norm3(x + self.dropout(self.feed_forward(x)))


class BTransformer(nn.Module):
    def __init__(self, vocab=5000, d_model=512, num_heads=8, num_layers=6, d_ff=2048, max_len=100, dropout=0.1):
        super().__init__()
        self.encoder_embedding, self.decoder_embedding = nn.Embedding(vocab, d_model), nn.Embedding(vocab, d_model)
        self.positional_encoding = BPositionalEncoding(d_model, max_len)
        self.encoder_layers = nn.ModuleList([BEncoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)])
        self.decoder_layers = nn.ModuleList([BDecoderLayer(d_model, num_heads, d_ff, dropout) for _ in range(num_layers)])
        self.fc, self.dropout = nn.Linear(d_model, vocab), nn.Dropout(dropout)

    def forward(self, src, tgt):
        src_mask = (src != 0).unsqueeze(1).unsqueeze(2)
        L = tgt.size(1)
        nopeak = (1 - torch.triu(torch.ones(1, L, L), diagonal=1)).bool()
        tgt_mask = (tgt != 0).unsqueeze(1).unsqueeze(3) & nopeak
        enc = self.dropout(self.positional_encoding(self.encoder_embedding(src)))
        dec = self.dropout(self.positional_encoding(self.decoder_embedding(tgt)))
        for layer in self.encoder_layers:
            enc = layer(enc, src_mask)
        for layer in self.decoder_layers:
            dec = layer(dec, enc, src_mask, tgt_mask)
        return self.fc(dec)


# ---------------------------------------------------------------- tutorial D
def positional_table(length, E):
    # the tutorial's: angle[pos, i] = pos / 10000^(2i/E), sin on even, cos on odd columns
    pos = torch.arange(length, dtype=torch.float32).reshape(-1, 1)
    angle = pos / torch.pow(10000, torch.arange(0, E, 2, dtype=torch.float32) / E)
    P = torch.zeros(length, E)
    P[:, 0::2], P[:, 1::2] = torch.sin(angle), torch.cos(angle)
    return P


class DTransformer(nn.Module):
    """torch.nn.Transformer + the tutorial's positional encoding, once, on src (S, N, E)."""

    def __init__(self, nhead, num_encoder_layers, d_model=512, dropout=0.1):
        super().__init__()
        self.transformer = nn.Transformer(d_model=d_model, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                          num_decoder_layers=6, dim_feedforward=2048, dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("P", positional_table(512, d_model))

    def forward(self, src, tgt):
        src = self.dropout(src + self.P[: src.size(0)].unsqueeze(1))
        return self.transformer(src, tgt)
