-- How the weight arena stores a weight: bf16 rows, or a matrix kept in the model file's quantized
-- blocks (ggml's type ids, runtime/formats/dequant.h; the kernel's decoders: templates/weights.cuh).
local wtypes = {}

wtypes.BF16 = 30

-- The block types the kernel reads: elements and bytes per block, and the template's name; grid:
-- its decoder reads templates/iq_grids.cuh's tables.
wtypes.BLOCKS = {
  [8] = { name = "Q8_0", block = 32, bytes = 34 },
  [2] = { name = "Q4_0", block = 32, bytes = 18 },
  [3] = { name = "Q4_1", block = 32, bytes = 20 },
  [6] = { name = "Q5_0", block = 32, bytes = 22 },
  [7] = { name = "Q5_1", block = 32, bytes = 24 },
  [10] = { name = "Q2_K", block = 256, bytes = 84 },
  [11] = { name = "Q3_K", block = 256, bytes = 110 },
  [12] = { name = "Q4_K", block = 256, bytes = 144 },
  [16] = { name = "IQ2_XXS", block = 256, bytes = 66, grid = true },
  [17] = { name = "IQ2_XS", block = 256, bytes = 74, grid = true },
  [22] = { name = "IQ2_S", block = 256, bytes = 82, grid = true },
  [18] = { name = "IQ3_XXS", block = 256, bytes = 98, grid = true },
  [21] = { name = "IQ3_S", block = 256, bytes = 110, grid = true },
  [19] = { name = "IQ1_S", block = 256, bytes = 50, grid = true },
  [29] = { name = "IQ1_M", block = 256, bytes = 56, grid = true },
  [20] = { name = "IQ4_NL", block = 32, bytes = 18 },
  [23] = { name = "IQ4_XS", block = 256, bytes = 136 },
  [13] = { name = "Q5_K", block = 256, bytes = 176 },
  [14] = { name = "Q6_K", block = 256, bytes = 210 },
  [39] = { name = "MXFP4", block = 32, bytes = 17 },
  [40] = { name = "NVFP4", block = 64, bytes = 36 },
  [34] = { name = "TQ1_0", block = 256, bytes = 54 },
  [35] = { name = "TQ2_0", block = 256, bytes = 66 },
  [41] = { name = "Q1_0", block = 128, bytes = 18 },
  [42] = { name = "Q2_0", block = 64, bytes = 18 },
}

function wtypes.name(t) return t == wtypes.BF16 and "BF16" or wtypes.BLOCKS[t].name end

-- The literal a template call names the type by.
function wtypes.macro(t) return "MKC_W_" .. wtypes.name(t) end

return wtypes
