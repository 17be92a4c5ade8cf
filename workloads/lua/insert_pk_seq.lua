-- insert_pk_seq.lua: single-row INSERTs into tables whose primary key is an AUTO_INCREMENT integer.
--
-- The sequential half of the primary-key-order experiment (seed 003, "Making Aurora Write Latency
-- 15x Higher by Choosing a Bad Primary Key"): every new row goes to the right-most leaf of the
-- clustered index, so the pages being written stay in the buffer pool however large the table grows.
-- Compare with insert_pk_random.lua, which differs only in the key. Shared logic: benchfleet_common.lua.

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local common = require("benchfleet_common")

common.define {
   prefix = "seqpk",
   columns = "id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, number INT NOT NULL",
   keys = function() return {"PRIMARY KEY (id)", "KEY idx_number (number)"} end,
   insert_columns = "number",
   row = function()
      return string.format("%d", sysbench.rand.default(1, sysbench.opt.table_size))
   end,
}
