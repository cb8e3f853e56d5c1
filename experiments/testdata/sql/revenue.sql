-- Revenue by ship mode of the lineitems shipped in 1994 at a 5-7% discount.
select
	l_shipmode,
	sum(l_extendedprice * l_discount) as revenue,
	count(*) as lines
from
	lineitem
where
	l_shipdate >= date '1994-01-01'
	and l_shipdate < date '1995-01-01'
	and l_discount between 0.05 and 0.07
group by
	l_shipmode
order by
	revenue desc
