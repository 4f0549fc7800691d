// A session's page under ctxlog serve: the report's page (page.js), kept
// current. When the server says the session's head moved, the page is
// read again and its body replaced, at the step the reader was on (or the
// newest, when they were on the newest); no reload. It also shows the
// session's line of the list and its audit trail. Every recorded string
// is put in the page as text, never as markup.
(function(){
'use strict';
var busy=false,again=false,connected=false;
function $(id){return document.getElementById(id);}
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!==undefined&&text!==null)e.textContent=String(text);return e;}
function fmt(n){return n===null||n===undefined?'–':Number(n).toLocaleString('en-US');}
function bar(){return $('serve-bar');}
function session(){var b=bar();return b?b.getAttribute('data-session'):'';}
function head(){var b=bar();return b?Number(b.getAttribute('data-head')):0;}
function get(url){return fetch(url,{credentials:'same-origin',headers:{'Accept':'application/json'}}).then(function(r){return r.json();});}
function say(text){var s=$('serve-live');if(s)s.textContent=text;}

// The session's line of the list, and its audit trail.
function extras(){
  var id=session();if(!id)return;
  get('/api/sessions?'+new URLSearchParams({q:id,limit:'1'}).toString()).then(function(d){
    var r=(d.rows||[])[0],info=$('serve-info');if(!r||!info)return;
    info.textContent=[r.agent,r.model,r.project,fmt(r.steps)+' steps','peak '+fmt(r.peak_tokens)+' tokens',fmt(r.compactions)+' compactions',fmt(r.pruned_parts)+' outputs pruned',r.cost_usd===null||r.cost_usd===undefined?'cost not recorded':'$'+Number(r.cost_usd).toFixed(2)].filter(Boolean).join(' · ');
    if(r.live)info.appendChild(el('span','badge live','live'));
  });
  get('/api/audit?'+new URLSearchParams({session:id}).toString()).then(function(d){
    var list=$('audit-lines'),count=$('audit-count');if(!list)return;
    list.textContent='';
    (d.lines||[]).forEach(function(l){
      list.appendChild(el('li','', 'seq '+l.seq+' · '+new Date(l.at).toISOString().slice(0,19).replace('T',' ')+' · '+l.kind+' · '+l.what+(l.tokens!==null&&l.tokens!==undefined?' · '+fmt(l.tokens)+' tokens':'')+' · '+l.policy));
    });
    if(count)count.textContent=d.ok?'('+(d.lines||[]).length+' entries'+(d.left_out?', the newest; '+fmt(d.left_out)+' older ones: ctxlog audit '+id:'')+')':'('+d.error+')';
  });
}

// Reads the page again and puts its body in place of this one.
function refresh(){
  if(busy){again=true;return;}
  busy=true;say('updating…');
  fetch(location.pathname,{credentials:'same-origin'}).then(function(r){
    if(!r.ok)throw new Error('HTTP '+r.status);
    return r.text();
  }).then(function(text){
    var doc=new DOMParser().parseFromString(text,'text/html');
    Array.prototype.forEach.call(doc.body.querySelectorAll('script[src]'),function(s){s.remove();});
    var view=window.ctxlogReportView,at=view?view.where():null,y=window.scrollY;
    var auditOpen=$('audit-box')&&$('audit-box').open;
    document.documentElement.replaceChild(document.adoptNode(doc.body),document.body);
    if(auditOpen&&$('audit-box'))$('audit-box').open=true;
    window.ctxlogReportView=window.ctxlogReport(at?(at.last?{curve:at.curve,step:'last'}:at):null);
    window.scrollTo(0,y);
    extras();say('live');
  }).catch(function(e){say('could not update: '+e.message);})
  .then(function(){busy=false;if(again){again=false;refresh();}});
}

var events=new EventSource('/events');
events.addEventListener('hello',function(){
  // After the stream was lost, what moved meanwhile was not told.
  if(connected)refresh();
  connected=true;say('live');
});
events.addEventListener('heads',function(ev){
  var d=JSON.parse(ev.data),id=session(),shown=head();
  if(d.many||d.changed.some(function(c){return c.session===id&&c.head!==shown;}))refresh();
});
events.addEventListener('error',function(){say('not connected: retrying');});
extras();
})();
