-- iibench.lua: an iiBench-style insert benchmark (seed 001, "Benchmarking single-row insert
-- performance on Amazon EC2"): single-row INSERTs into a `purchases` table with an AUTO_INCREMENT
-- primary key and 0 to 3 secondary indexes (--secondary-indexes), whose random columns make every
-- secondary index insert land on a random leaf. The seed saw ~25k inserts/s without secondary
-- indexes and ~9k with 3, falling as the indexes outgrew the buffer pool and at checkpoints.
--
-- Written for benchfleet, not a port of iiBench: the table and index definitions follow the seed's
-- post (without its range partitioning); value ranges are our own. One event inserts one row, so
-- tps is the insert rate and the rows inserted so far are the prepared rows plus the running sum
-- of tps x report interval (exactly: plus each finished step's transaction count).

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local common = require("benchfleet_common")

local SECONDARY = {
   "KEY marketsegment (price, customerid)",
   "KEY registersegment (cashregisterid, price, customerid)",
   "KEY pdc (price, dateandtime, customerid)",
}

common.define {
   prefix = "purchases",
   options = {
      secondary_indexes = {"Secondary indexes on each table, 0 to 3 (marketsegment, registersegment, pdc)", 3},
   },
   columns = "transactionid BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, dateandtime DATETIME, " ..
      "cashregisterid INT NOT NULL, customerid INT NOT NULL, productid INT NOT NULL, price FLOAT NOT NULL",
   keys = function()
      local n = sysbench.opt.secondary_indexes
      if n < 0 or n > #SECONDARY then
         error(string.format("--secondary-indexes must be between 0 and %d, not %d", #SECONDARY, n))
      end
      local keys = {"PRIMARY KEY (transactionid)"}
      for i = 1, n do
         keys[#keys + 1] = SECONDARY[i]
      end
      return keys
   end,
   insert_columns = "dateandtime, cashregisterid, customerid, productid, price",
   row = function()
      local r = sysbench.rand.uniform
      return string.format("NOW(), %d, %d, %d, %d.%02d", r(0, 999), r(0, 99999), r(0, 9999),
                           r(0, 499), r(0, 99))
   end,
}
