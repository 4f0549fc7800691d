// The list page of ctxlog serve: the sessions (a page at a time, sorted
// and filtered by the server), search over every session, the usage
// rollup; kept current by the server's event stream. Every recorded
// string is put in the page as text, never as markup.
(function(){
'use strict';
var PAGE=100;
var list={sort:'date',desc:true,q:'',shown:PAGE,busy:false,again:false};
var find={q:'',dropped:false,skip:0};
function $(id){return document.getElementById(id);}
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!==undefined&&text!==null)e.textContent=String(text);return e;}
function fmt(n){return n===null||n===undefined?'–':Number(n).toLocaleString('en-US');}
function money(n){return n===null||n===undefined?'–':'$'+Number(n).toFixed(2);}
function get(url){
  return fetch(url,{credentials:'same-origin',headers:{'Accept':'application/json'}}).then(function(r){
    return r.json().then(function(d){if(!r.ok&&!d.error)d.error='HTTP '+r.status;return d;});
  });
}
function query(o){return new URLSearchParams(o).toString();}
function sessionHref(id,seq){return '/s/'+encodeURIComponent(id)+(seq?'#seq='+seq:'');}

// The sessions.
function cell(tr,text,cls){var td=el('td',cls,text);tr.appendChild(td);return td;}
function rowView(r){
  var tr=el('tr');tr.setAttribute('data-session',r.session);
  if(r.started_at===undefined){
    tr.className='unreadable';
    cell(tr,r.session);var td=cell(tr,r.error);td.colSpan=10;return tr;
  }
  if(r.live)tr.className='live';
  cell(tr,(r.date||'').slice(0,16).replace('T',' '));
  cell(tr,r.agent);
  var t=cell(tr,'');var a=el('a','',r.title||r.source_session||r.session);a.href=sessionHref(r.session);t.appendChild(a);
  if(r.live)t.appendChild(el('span','badge live','live'));
  if(r.interrupted)t.appendChild(el('span','badge','import cut short'));
  cell(tr,r.project);
  cell(tr,fmt(r.steps),'num');cell(tr,fmt(r.peak_tokens),'num');cell(tr,fmt(r.compactions),'num');
  cell(tr,fmt(r.pruned_parts),'num');cell(tr,fmt(r.events),'num');cell(tr,r.model);
  cell(tr,money(r.cost_usd),'num');
  return tr;
}
function loadRows(){
  if(list.busy){list.again=true;return;}
  list.busy=true;
  get('/api/sessions?'+query({sort:list.sort,desc:list.desc?'1':'0',offset:'0',limit:String(list.shown),q:list.q})).then(function(d){
    var body=$('rows');body.textContent='';
    (d.rows||[]).forEach(function(r){body.appendChild(rowView(r));});
    var live=(d.rows||[]).filter(function(r){return r.live;}).length;
    $('status').textContent=fmt(d.stored)+' sessions stored'+(d.complete?'':' · reading the store…')+(d.error?' · '+d.error:'');
    $('shown').textContent=(d.rows||[]).length+' of '+fmt(d.total)+' shown'+(live?' · '+live+' live':'');
    $('more').hidden=(d.rows||[]).length>=d.total;
    document.body.setAttribute('data-version',String(d.version));
  }).catch(function(e){$('status').textContent='the server did not answer: '+e.message;})
  .then(function(){list.busy=false;if(list.again){list.again=false;loadRows();}});
}
Array.prototype.forEach.call(document.querySelectorAll('th[data-sort]'),function(th){
  th.addEventListener('click',function(){
    var by=th.getAttribute('data-sort');
    list.desc=list.sort===by?!list.desc:by!=='agent'&&by!=='title';list.sort=by;
    Array.prototype.forEach.call(document.querySelectorAll('th[data-sort]'),function(o){o.className='';});
    th.className='sorted '+(list.desc?'desc':'asc');
    loadRows();
  });
});
var filterTimer=null;
$('filter').addEventListener('input',function(){
  clearTimeout(filterTimer);
  filterTimer=setTimeout(function(){list.q=$('filter').value;list.shown=PAGE;loadRows();},200);
});
$('more').addEventListener('click',function(){list.shown+=PAGE;loadRows();});

// Search.
// The snippet with its matches marked; highlights are byte ranges.
function snippetView(text,ranges){
  var pre=el('pre');
  var bytes=new TextEncoder().encode(text),dec=new TextDecoder(),at=0;
  (ranges||[]).forEach(function(r){
    if(r[0]<at||r[1]>bytes.length)return;
    pre.appendChild(document.createTextNode(dec.decode(bytes.slice(at,r[0]))));
    pre.appendChild(el('mark','',dec.decode(bytes.slice(r[0],r[1]))));
    at=r[1];
  });
  pre.appendChild(document.createTextNode(dec.decode(bytes.slice(at))));
  return pre;
}
function hitView(h){
  var li=el('li','hit');
  var l=h.label||{};
  var a=el('a','',(l.title||l.source_session||h.session));a.href=sessionHref(h.session,h.seq);
  li.appendChild(a);
  var who=h.author+(h.tool?' · tool '+h.tool+(h.call_id?' (call '+h.call_id+')':''):'');
  li.appendChild(el('div','meta',[l.agent,l.project,'seq '+h.seq,new Date(h.time).toISOString().slice(0,16).replace('T',' '),who,h.status_words].filter(Boolean).join(' · ')));
  li.appendChild(snippetView(h.snippet,h.highlights));
  return li;
}
function search(more){
  if(!more){find.skip=0;$('hits').textContent='';}
  $('hits-box').hidden=false;$('hits-error').hidden=true;
  $('hits-head').textContent='Searching for '+find.q+'…';
  get('/api/search?'+query({q:find.q,dropped:find.dropped?'1':'0',skip:String(find.skip)})).then(function(d){
    if(!d.ok){$('hits-error').hidden=false;$('hits-error').textContent=d.error;$('hits-head').textContent='Search';return;}
    d.hits.forEach(function(h){$('hits').appendChild(hitView(h));});
    find.skip+=d.hits.length;
    $('hits-head').textContent=find.skip+' hit'+(find.skip===1?'':'s')+' for '+find.q+(d.more?' (more below)':'');
    $('hits-more').hidden=!d.more;
  }).catch(function(e){$('hits-error').hidden=false;$('hits-error').textContent=e.message;});
}
$('search-form').addEventListener('submit',function(ev){
  ev.preventDefault();
  find.q=$('search').value.trim();find.dropped=$('dropped').checked;
  if(!find.q){$('hits-box').hidden=true;return;}
  history.replaceState(null,'','/?'+query({q:find.q}));
  search(false);
});
$('hits-more').addEventListener('click',function(){search(true);});

// Usage, as bars of total tokens per group.
var SVG='http://www.w3.org/2000/svg';
function svg(tag,attrs){var e=document.createElementNS(SVG,tag);Object.keys(attrs).forEach(function(k){e.setAttribute(k,String(attrs[k]));});return e;}
function loadUsage(){
  get('/api/usage?'+query({by:$('usage-by').value})).then(function(d){
    var box=$('usage');box.textContent='';
    if(!d.ok){box.appendChild(el('p','error',d.error));return;}
    var groups=d.groups||[],W=1100,H=180,max=1;
    groups.forEach(function(g){max=Math.max(max,g.total);});
    var chart=svg('svg',{viewBox:'0 0 '+W+' '+(H+30),width:'100%','class':'bars',id:'usage-chart'});
    var w=groups.length?W/groups.length:W;
    groups.forEach(function(g,i){
      var h=Math.max(1,Math.round(H*g.total/max));
      var r=svg('rect',{x:(i*w+1).toFixed(1),y:H-h,width:Math.max(1,w-2).toFixed(1),height:h});
      var t=svg('title',{});t.textContent=g.key+': '+fmt(g.total)+' tokens, '+fmt(g.steps)+' steps, '+fmt(g.compactions)+' compactions, '+money(g.cost_usd)+(g.cost_estimated?' (partly estimated)':'');
      r.appendChild(t);chart.appendChild(r);
    });
    if(groups.length){
      var first=svg('text',{x:0,y:H+16});first.textContent=groups[0].key;chart.appendChild(first);
      var last=svg('text',{x:W,y:H+16,'text-anchor':'end'});last.textContent=groups[groups.length-1].key;chart.appendChild(last);
    }
    box.appendChild(chart);
    var t=d.total||{};
    $('usage-total').textContent=fmt(t.total)+' tokens · '+fmt(t.steps)+' steps · '+fmt(t.compactions)+' compactions · '+fmt(t.prunes)+' prunes · '+money(t.cost_usd)+(t.cost_estimated?' (partly estimated from list prices)':'');
  }).catch(function(e){$('usage').textContent='usage: '+e.message;});
}
$('usage-by').addEventListener('change',loadUsage);

// Kept current: every move of a head reads the shown page again.
var usageTimer=null;
var events=new EventSource('/events');
events.addEventListener('heads',function(){
  loadRows();
  clearTimeout(usageTimer);usageTimer=setTimeout(loadUsage,2000);
});
events.addEventListener('hello',function(){loadRows();});

var asked=new URLSearchParams(location.search);
if(asked.get('q')){$('search').value=asked.get('q');find.q=asked.get('q');search(false);}
loadRows();loadUsage();
})();
