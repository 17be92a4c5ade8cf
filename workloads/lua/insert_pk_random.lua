-- insert_pk_random.lua: single-row INSERTs into tables whose primary key is a random UUID-like
-- VARCHAR(36).
--
-- The random half of the primary-key-order experiment (seed 003, "Making Aurora Write Latency 15x
-- Higher by Choosing a Bad Primary Key"): each new row lands on a random leaf of the clustered
-- index, so once the table outgrows the buffer pool most inserts must first read a page from disk
-- (and dirty a different page each time). Compare with insert_pk_seq.lua, which differs only in the
-- key. Shared logic: benchfleet_common.lua.

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local common = require("benchfleet_common")

common.define {
   prefix = "randpk",
   columns = "id VARCHAR(36) NOT NULL, number INT NOT NULL",
   keys = function() return {"PRIMARY KEY (id)", "KEY idx_number (number)"} end,
   insert_columns = "id, number",
   row = function()
      return string.format("'%s', %d", common.uuid_like(),
                           sysbench.rand.default(1, sysbench.opt.table_size))
   end,
}
